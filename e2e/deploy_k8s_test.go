package e2e_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

var updateK8s = flag.Bool("update-k8s", false, "rewrite deploy/kubernetes/prometheusrule.yaml from the Prometheus rules")

const prometheusRuleFile = "../deploy/kubernetes/prometheusrule.yaml"

// prometheusRule is the PrometheusRule object (Prometheus Operator) holding
// deploy/prometheus/lockproxy.rules.yml's groups, unchanged.
func prometheusRule(t *testing.T) []byte {
	t.Helper()
	rules, err := os.ReadFile("../deploy/prometheus/lockproxy.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("# Generated from deploy/prometheus/lockproxy.rules.yml by\n" +
		"# go test -run TestPrometheusRuleGenerated ./e2e -update-k8s; do not edit.\n" +
		"apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: lockproxy\n" +
		"  labels: {app.kubernetes.io/name: lockproxy}\nspec:\n")
	body := false
	for _, l := range strings.Split(strings.TrimRight(string(rules), "\n"), "\n") {
		if !body && (strings.HasPrefix(l, "#") || l == "") {
			continue // the file's own header
		}
		body = true
		if l == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + l + "\n")
	}
	return b.Bytes()
}

// The PrometheusRule is the Prometheus rules file's groups, regenerated
// whenever they change.
func TestPrometheusRuleGenerated(t *testing.T) {
	want := prometheusRule(t)
	if *updateK8s {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRuleFile)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (%v): go test -run TestPrometheusRuleGenerated ./e2e -update-k8s", prometheusRuleFile, err)
	}
	var obj struct {
		Spec map[string]any `yaml:"spec"`
	}
	var rules map[string]any
	raw, _ := os.ReadFile("../deploy/prometheus/lockproxy.rules.yml")
	if err := yaml.Unmarshal(got, &obj); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj.Spec, rules) {
		t.Fatal("the PrometheusRule's spec is not the rules file")
	}
}

// k8sDocs parses every document of a manifest file.
func k8sDocs(t *testing.T, file string) []map[string]any {
	t.Helper()
	f, err := os.Open("../" + file) // file is named from the repository's root
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		docs = append(docs, d)
	}
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

func str(v any) string { return fmt.Sprint(v) }

// The manifests are what an operator can apply: each file's ConfigMap is a
// valid lockproxy configuration; lockproxy's container probes /livez for
// liveness (not Valkey's health) and /readyz for readiness, has resources,
// runs non-root on a read-only root file system; the grace period covers
// shutdown_timeout; the PodDisruptionBudget, Service and ServiceMonitor
// select what they should. On main there were no manifests.
func TestKubernetesManifests(t *testing.T) {
	for _, file := range []string{"deploy/kubernetes/shared-tier.yaml", "deploy/kubernetes/sidecar.yaml"} {
		t.Run(file, func(t *testing.T) {
			kinds := map[string]map[string]any{}
			for _, d := range k8sDocs(t, file) {
				kinds[str(d["kind"])] = d
			}
			for _, k := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor"} {
				if kinds[k] == nil {
					t.Fatalf("no %s", k)
				}
			}
			cfg, err := parseConfigMap(t, file, kinds["ConfigMap"])
			if err != nil {
				t.Fatalf("the ConfigMap's lockproxy.yaml: %v", err)
			}
			if w := cfg.Warnings(); len(w) > 0 {
				t.Errorf("the ConfigMap's lockproxy.yaml has warnings: %q", w)
			}
			_, metricsPort, _ := net.SplitHostPort(cfg.Metrics.Listen)

			dep := kinds["Deployment"]
			pod := at(dep, "spec", "template", "spec")
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
			if got := str(at(lp, "livenessProbe", "httpGet", "path")); got != "/livez" {
				t.Errorf("liveness probe %s, want /livez (a Valkey outage must not restart the proxy)", got)
			}
			if got := str(at(lp, "readinessProbe", "httpGet", "path")); got != "/readyz" {
				t.Errorf("readiness probe %s", got)
			}
			portOK := false
			for i := 0; at(lp, "ports", i) != nil; i++ {
				if at(lp, "ports", i, "name") == "metrics" && str(at(lp, "ports", i, "containerPort")) == metricsPort {
					portOK = true
				}
			}
			if !portOK {
				t.Errorf("no container port named metrics at the config's metrics port %s", metricsPort)
			}
			if at(lp, "resources", "requests", "cpu") == nil || at(lp, "resources", "requests", "memory") == nil || at(lp, "resources", "limits", "memory") == nil {
				t.Errorf("resources: %v", at(lp, "resources"))
			}
			if at(lp, "securityContext", "readOnlyRootFilesystem") != true || at(lp, "securityContext", "allowPrivilegeEscalation") != false ||
				at(pod, "securityContext", "runAsNonRoot") != true {
				t.Errorf("security context: container %v, pod %v", at(lp, "securityContext"), at(pod, "securityContext"))
			}
			grace, _ := at(pod, "terminationGracePeriodSeconds").(int)
			pre, _ := at(lp, "lifecycle", "preStop", "sleep", "seconds").(int)
			if need := cfg.ShutdownTimeout.D() + time.Duration(pre)*time.Second + time.Second; time.Duration(grace)*time.Second < need {
				t.Errorf("terminationGracePeriodSeconds %d < shutdown_timeout %s + preStop %ds + 1s", grace, cfg.ShutdownTimeout.D(), pre)
			}

			podLabels := at(dep, "spec", "template", "metadata", "labels")
			matches := func(sel any) bool {
				m, _ := sel.(map[string]any)
				if len(m) == 0 {
					return false
				}
				for k, v := range m {
					if at(podLabels, k) != v {
						return false
					}
				}
				return true
			}
			if !matches(at(dep, "spec", "selector", "matchLabels")) {
				t.Error("the Deployment's selector does not match its pods")
			}
			if !matches(at(kinds["PodDisruptionBudget"], "spec", "selector", "matchLabels")) {
				t.Error("the PodDisruptionBudget does not select the pods")
			}
			svc := kinds["Service"]
			if !matches(at(svc, "spec", "selector")) {
				t.Error("the Service does not select the pods")
			}
			sm := kinds["ServiceMonitor"]
			for k, v := range at(sm, "spec", "selector", "matchLabels").(map[string]any) {
				if at(svc, "metadata", "labels", k) != v {
					t.Errorf("the ServiceMonitor does not select the Service (%s)", k)
				}
			}
			smPort := at(sm, "spec", "endpoints", 0, "port")
			found := false
			for i := 0; at(svc, "spec", "ports", i) != nil; i++ {
				found = found || at(svc, "spec", "ports", i, "name") == smPort
			}
			if !found {
				t.Errorf("the ServiceMonitor's port %v is not the Service's", smPort)
			}
		})
	}
}
