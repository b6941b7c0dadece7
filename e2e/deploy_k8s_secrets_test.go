package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
)

// parseConfigMap validates a manifest's ConfigMap lockproxy.yaml as the
// pod reads it: from a directory where each password_file it names exists
// (the pod mounts a Secret there; here a random stand-in).
func parseConfigMap(t *testing.T, file string, cm map[string]any) (*config.Config, error) {
	t.Helper()
	data := str(at(cm, "data", "lockproxy.yaml"))
	dir := t.TempDir()
	for _, m := range regexp.MustCompile(`(?m)^\s*password_file:\s*(\S+)`).FindAllStringSubmatch(data, -1) {
		if filepath.IsAbs(m[1]) {
			t.Fatalf("%s: password_file %s is absolute: name it relative to the file, beside it in the pod", file, m[1])
		}
		p := filepath.Join(dir, m[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("stand-in-"+filepath.Base(p)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return config.Parse(filepath.Join(dir, filepath.Base(file)+" (ConfigMap)"), []byte(data))
}

// The manifests carry no credential (on main: the e2e tests' "0nc4ll"
// hash as the operate user's), mount each password_file from a Secret,
// give every probe a timeout, name the release image, and drain with
// drain_delay inside the grace period instead of a preStop sleep.
func TestKubernetesManifestsShipNoSecret(t *testing.T) {
	image := regexp.MustCompile(`^ghcr\.io/lockproxy/lockproxy:\S+$`)
	for _, file := range []string{"deploy/kubernetes/shared-tier.yaml", "deploy/kubernetes/sidecar.yaml"} {
		t.Run(file, func(t *testing.T) {
			kinds := map[string]map[string]any{}
			for _, d := range k8sDocs(t, file) {
				kinds[str(d["kind"])] = d
			}
			data := str(at(kinds["ConfigMap"], "data", "lockproxy.yaml"))
			if m := regexp.MustCompile(`(?m)^\s*(password|password_sha256):`).FindString(data); m != "" {
				t.Errorf("the ConfigMap holds a credential: %q", m)
			}
			cfg, err := parseConfigMap(t, file, kinds["ConfigMap"])
			if err != nil {
				t.Fatal(err)
			}
			if p := cfg.PublishedSecrets(); len(p) > 0 {
				t.Errorf("published passwords: %q", p)
			}
			pod := at(kinds["Deployment"], "spec", "template", "spec")
			var lp map[string]any
			for _, list := range []string{"containers", "initContainers"} {
				for i := 0; at(pod, list, i) != nil; i++ {
					if c := at(pod, list, i).(map[string]any); c["name"] == "lockproxy" {
						lp = c
					}
				}
			}
			if lp == nil {
				t.Fatal("no lockproxy container")
			}
			if img := str(at(lp, "image")); !image.MatchString(img) {
				t.Errorf("image %q, want ghcr.io/lockproxy/lockproxy:<release>", img)
			}
			for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
				if to, _ := at(lp, probe, "timeoutSeconds").(int); to < 1 {
					t.Errorf("%s has no timeoutSeconds", probe)
				}
			}
			if at(lp, "lifecycle", "preStop") != nil {
				t.Error("a preStop hook: drain_delay does its work")
			}
			grace, _ := at(pod, "terminationGracePeriodSeconds").(int)
			if need := cfg.DrainDelay.D() + cfg.ShutdownTimeout.D() + time.Second; time.Duration(grace)*time.Second < need {
				t.Errorf("terminationGracePeriodSeconds %d < drain_delay %s + shutdown_timeout %s + 1s", grace, cfg.DrainDelay.D(), cfg.ShutdownTimeout.D())
			}
			// Each password_file comes from a Secret projected beside the file.
			for _, u := range cfg.Admin.Users {
				if u.PasswordFile == "" {
					continue
				}
				rel := filepath.Base(filepath.Dir(u.PasswordFile)) + "/" + filepath.Base(u.PasswordFile)
				found := false
				for i := 0; at(pod, "volumes", i) != nil; i++ {
					for j := 0; at(pod, "volumes", i, "projected", "sources", j) != nil; j++ {
						for k := 0; at(pod, "volumes", i, "projected", "sources", j, "secret", "items", k) != nil; k++ {
							found = found || at(pod, "volumes", i, "projected", "sources", j, "secret", "items", k, "path") == rel
						}
					}
				}
				if !found {
					t.Errorf("admin user %s: no Secret projected at %s", u.Name, rel)
				}
			}
		})
	}
}

// The examples in deploy/examples carry no credential either: passwords
// come from files, which make ops-check fills with random stand-ins.
func TestExamplesShipNoSecret(t *testing.T) {
	files, _ := filepath.Glob("../deploy/examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	re := regexp.MustCompile(`(?m)^\s*(password|password_sha256):\s*\S`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := re.FindString(string(b)); m != "" {
			t.Errorf("%s holds a credential: %q", f, strings.TrimSpace(m))
		}
	}
}
