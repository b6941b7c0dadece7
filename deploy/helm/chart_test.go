package helm_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"gopkg.in/yaml.v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
)

const chartDir = "lockproxy"

// nonDefault are values that change every part of the chart a user is
// expected to set.
var nonDefault = map[string]any{
	"replicaCount":     5,
	"image":            map[string]any{"tag": "v9.9.9"},
	"port":             7000,
	"metricsPort":      9500,
	"upstreamPassword": map[string]any{"secretName": "valkey-auth", "key": "pw"},
	"admin": map[string]any{"users": []any{
		map[string]any{"name": "grafana", "role": "read", "secretName": "lp-admin", "key": "grafana"},
		map[string]any{"name": "oncall", "role": "operate", "secretName": "lp-admin", "key": "oncall"},
	}},
	"config": map[string]any{
		"drain_delay": "10s", "shutdown_timeout": "40s",
		"upstream": map[string]any{"addr": "valkey.prod:6379", "username": "lp", "reply_timeout": "2s"},
		"locks":    []any{map[string]any{"pattern": "job:*:lock", "release": "rewrite", "session": "client_addr"}},
	},
	"terminationGracePeriodSeconds": 60,
	"probes":                        map[string]any{"timeoutSeconds": 3},
	"podDisruptionBudget":           map[string]any{"enabled": false},
	"serviceMonitor":                map[string]any{"enabled": true},
}

// helm lint finds nothing above INFO, with the default values and with
// the others.
func TestChartLints(t *testing.T) {
	for name, vals := range map[string]map[string]any{"default": {}, "non-default": nonDefault} {
		l := lint.RunAll(chartDir, vals, "lockproxy")
		for _, m := range l.Messages {
			if m.Severity > support.InfoSev {
				t.Errorf("%s values: %v", name, m)
			}
		}
		if l.HighestSeverity > support.InfoSev {
			t.Errorf("%s values: highest severity %d", name, l.HighestSeverity)
		}
	}
}

// rendered is the chart rendered with vals: every object by kind.
func render(t *testing.T, vals map[string]any) map[string]map[string]any {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "lp", Namespace: "locks", IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	kinds := map[string]map[string]any{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		dec := yaml.NewDecoder(strings.NewReader(files[n]))
		for {
			var d map[string]any
			err := dec.Decode(&d)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", n, err, files[n])
			}
			if d == nil {
				continue
			}
			k, _ := d["kind"].(string)
			if kinds[k] != nil {
				t.Fatalf("two %s objects", k)
			}
			kinds[k] = d
		}
	}
	return kinds
}

// at walks a parsed document: at(d, "spec", "template", "spec").
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// checkConfig runs check-config's checks over the rendered lockproxy.yaml,
// in a directory where each password_file it names holds a stand-in (in
// the pod, the Secret projected there).
func checkConfig(t *testing.T, data string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	for _, m := range regexp.MustCompile(`(?m)^\s*password_file:\s*(\S+)`).FindAllStringSubmatch(data, -1) {
		p := filepath.Join(dir, m[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("stand-in for "+m[1]+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "lockproxy.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("the rendered lockproxy.yaml: %v\n%s", err, data)
	}
	for _, w := range append(cfg.Warnings(), cfg.CertificateWarnings(time.Now())...) {
		t.Errorf("check-config warns: %s", w)
	}
	for _, p := range cfg.PublishedSecrets() {
		t.Errorf("check-config refuses: %s", p)
	}
	if regexp.MustCompile(`(?m)^\s*(password|password_sha256):`).MatchString(data) {
		t.Errorf("the rendered configuration holds a credential:\n%s", data)
	}
	return cfg
}

// The chart renders, with the default values and with others, into what
// an operator can install: a configuration check-config accepts (no
// credential in it, no warning), the client and metrics ports where the
// configuration listens, probes on /livez and /readyz with timeouts, a
// grace period covering drain_delay and shutdown_timeout, each password
// from a Secret, a Service selecting the pods, the PodDisruptionBudget and
// ServiceMonitor as asked.
func TestChartRenders(t *testing.T) {
	for _, tc := range []struct {
		name          string
		vals          map[string]any
		image         string
		replicas      int
		users         []string
		upstreamEnv   string
		pdb, monitor  bool
		probeTimeout  int
		clientPort    string
		metricsPort   string
		lockPattern   string
		upstreamReply time.Duration
	}{
		{"default", map[string]any{}, "ghcr.io/lockproxy/lockproxy:v0.1.0", 3, []string{"oncall"}, "lockproxy-upstream",
			true, false, 2, "6380", "9380", "*:lock", config.DefaultReplyTimeout.D()},
		{"non-default", nonDefault, "ghcr.io/lockproxy/lockproxy:v9.9.9", 5, []string{"grafana", "oncall"}, "valkey-auth",
			false, true, 3, "7000", "9500", "job:*:lock", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kinds := render(t, tc.vals)
			for _, k := range []string{"ConfigMap", "Deployment", "Service"} {
				if kinds[k] == nil {
					t.Fatalf("no %s", k)
				}
			}
			if (kinds["PodDisruptionBudget"] != nil) != tc.pdb || (kinds["ServiceMonitor"] != nil) != tc.monitor {
				t.Errorf("PodDisruptionBudget %v, ServiceMonitor %v; want %v, %v", kinds["PodDisruptionBudget"] != nil, kinds["ServiceMonitor"] != nil, tc.pdb, tc.monitor)
			}
			cfg := checkConfig(t, at(kinds["ConfigMap"], "data", "lockproxy.yaml").(string))
			if !strings.HasSuffix(cfg.Listen, ":"+tc.clientPort) || !strings.HasSuffix(cfg.Metrics.Listen, ":"+tc.metricsPort) {
				t.Errorf("listen %s, metrics.listen %s", cfg.Listen, cfg.Metrics.Listen)
			}
			if len(cfg.Locks) != 1 || cfg.Locks[0].Pattern != tc.lockPattern || cfg.Upstream.ReplyTimeout.D() != tc.upstreamReply {
				t.Errorf("the values' config did not arrive: locks %v, reply_timeout %s", cfg.Locks, cfg.Upstream.ReplyTimeout)
			}

			dep := kinds["Deployment"]
			if r, _ := at(dep, "spec", "replicas").(int); r != tc.replicas {
				t.Errorf("replicas %v", at(dep, "spec", "replicas"))
			}
			pod := at(dep, "spec", "template", "spec")
			lp := at(pod, "containers", 0)
			if at(lp, "name") != "lockproxy" || at(lp, "image") != tc.image {
				t.Errorf("container %v, image %v; want lockproxy, %s", at(lp, "name"), at(lp, "image"), tc.image)
			}
			for probe, path := range map[string]string{"livenessProbe": "/livez", "readinessProbe": "/readyz", "startupProbe": "/livez"} {
				if at(lp, probe, "httpGet", "path") != path || at(lp, probe, "httpGet", "port") != "metrics" || at(lp, probe, "timeoutSeconds") != tc.probeTimeout {
					t.Errorf("%s: %v", probe, at(lp, probe))
				}
			}
			ports := map[string]string{}
			for i := 0; at(lp, "ports", i) != nil; i++ {
				ports[at(lp, "ports", i, "name").(string)] = strings.TrimSpace(strings.Trim(yamlString(at(lp, "ports", i, "containerPort")), "\n"))
			}
			if ports["redis"] != tc.clientPort || ports["metrics"] != tc.metricsPort {
				t.Errorf("container ports %v", ports)
			}
			grace, _ := at(pod, "terminationGracePeriodSeconds").(int)
			if need := cfg.DrainDelay.D() + cfg.ShutdownTimeout.D() + time.Second; time.Duration(grace)*time.Second < need {
				t.Errorf("terminationGracePeriodSeconds %d < drain_delay + shutdown_timeout + 1s (%s)", grace, need)
			}
			if at(lp, "lifecycle") != nil {
				t.Error("a lifecycle hook: drain_delay does the preStop sleep's work")
			}
			if at(lp, "env", 0, "name") != "LOCKPROXY_UPSTREAM_PASSWORD" || at(lp, "env", 0, "valueFrom", "secretKeyRef", "name") != tc.upstreamEnv {
				t.Errorf("upstream password: %v", at(lp, "env"))
			}
			if at(lp, "securityContext", "readOnlyRootFilesystem") != true || at(pod, "securityContext", "runAsNonRoot") != true {
				t.Errorf("security context: %v / %v", at(lp, "securityContext"), at(pod, "securityContext"))
			}
			// Each admin user's password_file is a Secret's key projected
			// beside the file.
			var users []string
			for _, u := range cfg.Admin.Users {
				users = append(users, u.Name)
				rel, _ := filepath.Rel(filepath.Dir(filepath.Dir(u.PasswordFile)), u.PasswordFile)
				found := false
				for j := 0; at(pod, "volumes", 0, "projected", "sources", j) != nil; j++ {
					found = found || at(pod, "volumes", 0, "projected", "sources", j, "secret", "items", 0, "path") == rel
				}
				if !found {
					t.Errorf("admin user %s: no Secret projected at %s", u.Name, rel)
				}
			}
			if strings.Join(users, ",") != strings.Join(tc.users, ",") {
				t.Errorf("admin users %v, want %v", users, tc.users)
			}
			if at(dep, "spec", "template", "metadata", "annotations", "checksum/config") == nil {
				t.Error("no checksum/config annotation: a changed configuration would not roll the pods")
			}

			podLabels, _ := at(dep, "spec", "template", "metadata", "labels").(map[string]any)
			selects := func(sel any) bool {
				m, _ := sel.(map[string]any)
				for k, v := range m {
					if podLabels[k] != v {
						return false
					}
				}
				return len(m) > 0
			}
			if !selects(at(dep, "spec", "selector", "matchLabels")) || !selects(at(kinds["Service"], "spec", "selector")) {
				t.Error("the Deployment or the Service does not select the pods")
			}
			if tc.pdb && !selects(at(kinds["PodDisruptionBudget"], "spec", "selector", "matchLabels")) {
				t.Error("the PodDisruptionBudget does not select the pods")
			}
			if tc.monitor {
				for k, v := range at(kinds["ServiceMonitor"], "spec", "selector", "matchLabels").(map[string]any) {
					if at(kinds["Service"], "metadata", "labels", k) != v {
						t.Errorf("the ServiceMonitor does not select the Service (%s)", k)
					}
				}
			}
		})
	}
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
