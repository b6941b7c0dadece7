package e2e_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"
)

// exported scrapes a running proxy's /metrics and returns every series name
// it serves (a histogram by its _bucket, _sum and _count) with its labels.
func exported(t *testing.T, e *env) map[string][]string {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(scrape(t, e)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	add := func(name string, labels []string) {
		for _, l := range labels {
			if !slices.Contains(out[name], l) {
				out[name] = append(out[name], l)
			}
		}
		if out[name] == nil {
			out[name] = []string{}
		}
	}
	for name, f := range fams {
		var labels []string
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		labels = append(labels, "instance", "job") // added by the scrape
		switch f.GetType().String() {
		case "HISTOGRAM":
			add(name+"_bucket", append(labels, "le"))
			add(name+"_sum", labels)
			add(name+"_count", labels)
		case "SUMMARY":
			add(name, append(labels, "quantile"))
			add(name+"_sum", labels)
			add(name+"_count", labels)
		default:
			add(name, labels)
		}
	}
	return out
}

var (
	// A series name in a query: lockproxy's own, the Go and process
	// collectors', or a recording rule's (level:metric:operation).
	seriesRE = regexp.MustCompile(`\b((?:lockproxy|go|process)_[a-z0-9_]+|lockproxy:[a-z0-9_:]+)((?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?)`)
	matchRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	byRE     = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
)

// checkQuery reports a query that asks for a series lockproxy does not
// serve, or for a label that series does not have.
func checkQuery(t *testing.T, where, q string, series map[string][]string) []string {
	t.Helper()
	var names []string
	var labels []string
	for _, m := range seriesRE.FindAllStringSubmatch(q, -1) {
		name := m[1]
		have, ok := series[name]
		if !ok {
			t.Errorf("%s: %s is not a series lockproxy serves: %s", where, name, q)
			continue
		}
		names = append(names, name)
		labels = append(labels, have...)
		for _, lm := range matchRE.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(have, lm[1]) {
				t.Errorf("%s: %s has no label %q: %s", where, name, lm[1], q)
			}
		}
	}
	for _, m := range byRE.FindAllStringSubmatch(q, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(labels, l) {
				t.Errorf("%s: groups by %q, a label none of its series has: %s", where, l, q)
			}
		}
	}
	if len(names) == 0 && !strings.HasPrefix(q, "prometheus") {
		t.Errorf("%s: names no lockproxy series: %q", where, q)
	}
	return names
}

// The Grafana dashboard and the Prometheus rules in deploy/ ask only for
// series a running lockproxy serves, with labels it gives them, and the
// dashboard shows what an operator of a lock proxy looks at.
func TestDeployQueriesUseExportedMetrics(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules+"  - pattern: \"{*}:mutex\"\n    fence:\n      counter: \"{base}:fence\"\n      guards: [\"{base}:*\"]\n"))
	a, _ := abStory(t, e)
	mustContain(t, a.do("NOSUCHCOMMAND"), "-ERR") // an error reply: lockproxy_command_errors_total
	series := exported(t, e)
	// The certificate series come from a proxy that has a certificate.
	for name, labels := range exported(t, tlsListenerEnv(t)) {
		if _, ok := series[name]; !ok {
			series[name] = labels
		}
	}

	// The rules: recording rules add series of their own.
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "prometheus", "lockproxy.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Record, Alert, Expr string
				Labels, Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				checkQuery(t, "rule "+r.Record, r.Expr, series)
				series[r.Record] = []string{"job", "instance", "rule", "kind", "outcome"}
				continue
			}
			alerts++
			checkQuery(t, "alert "+r.Alert, r.Expr, series)
			if r.Annotations["description"] == "" || r.Annotations["runbook_url"] == "" || r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("alert %s needs a summary, a description, a runbook_url and a severity", r.Alert)
			}
		}
	}
	if alerts < 7 {
		t.Fatalf("%d alerts in the rules file; the walk is broken", alerts)
	}

	// The dashboard.
	raw, err = os.ReadFile(filepath.Join("..", "deploy", "grafana", "lockproxy.json"))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr       string
		Datasource struct{ UID string }
	}
	var dash struct {
		UID    string
		Panels []struct {
			Type, Title string
			Datasource  struct{ UID string }
			Targets     []target
		}
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: %d queries, data source %q; want queries on ${datasource}", p.Title, len(p.Targets), p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			for _, n := range checkQuery(t, "panel "+p.Title, tg.Expr, series) {
				used[n] = true
			}
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			checkQuery(t, "variable "+v.Name, q["query"].(string), series)
		}
	}
	// What the issue asks the dashboard to show: lock traffic by rule and
	// outcome, hold and wait times, grants, refusals, upstream health,
	// clients.
	for _, want := range []string{"lockproxy_lock_events_total", "lockproxy_grants_total", "lockproxy_refusals_total",
		"lockproxy_lock_hold_seconds_bucket", "lockproxy_lock_wait_seconds_bucket", "lockproxy_upstream_connections",
		"lockproxy_upstream_dials_total", "lockproxy_clients", "lockproxy_maxclients", "lockproxy_successor_deletions_total",
		"lockproxy_stale_fenced_writes_refused_total", "lockproxy_config_last_reload_successful"} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}
