package telemetry

import (
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// filled is a Numbers with a different value in every field, two rules
// with their own counts and a histogram each, in front of a cluster when
// cluster is set.
func filled(cluster bool) *Numbers {
	n := &Numbers{Version: "9.9", UptimeSeconds: 11, Clients: 12, Rejected: 13, MaxClients: 14,
		Dedicated: 15, SharedUpstream: 16, Dials: 17, DialErrors: 18, Probed: true, Up: false, UpReason: "timeout",
		UpstreamFailedCommands: 19, ClientIn: 20, ClientOut: 21, LockRules: 2, Locks: &LockStats{},
		AdminAuthFailures: 22, AdminAuthLimited: 23, Reloads: 24, ReloadFailures: 25, ReloadRan: true,
		ReloadError: "line 3: bad", LogWarnings: 26, LogErrors: 27, AuditDropped: 28,
		Epoch: 29, GrantsLost: 30, GrantsUndone: 31, DurableShort: 32}
	for i, r := range []string{"unreachable", "timeout", "tls_mismatch", "certificate", "auth", "permission", "error"} {
		n.UpstreamErrors = append(n.UpstreamErrors, Count{r, int64(40 + i)})
	}
	for i, f := range []string{"forward", "lock", "dedicated", "pubsub", "replication", "connection", "admin", "server"} {
		n.Commands = append(n.Commands, Count{f, int64(50 + i)})
		var h Histogram
		h.Observe(time.Duration(i+1) * time.Millisecond)
		n.RoundTrips = append(n.RoundTrips, Dist{f, h.Snapshot()})
	}
	n.CommandLabels = []string{"unknown", "get", "set"}
	n.PerCommand = NewCommandStats(3)
	for l := range 3 {
		for range l + 1 {
			n.PerCommand.Count(l)
		}
		n.PerCommand.Observe(l, int64(l+1)*int64(time.Millisecond), -1)
	}
	n.PerCommand.Observe(0, 1000, 0)         // ERR
	n.PerCommand.Observe(2, 1000, CodeOther) // other
	n.SlowCommands = 33
	n.Certificates = []Count{{"client-listener", 1900000000}, {"upstream-ca", 1900000001}}
	for i, label := range []string{"a:*", "b:*"} {
		rs, k := n.Locks.Rule(label), int64(100*(i+1))
		rs.Grants.Add(k + 1)
		rs.Contention.Add(k + 2)
		rs.Released.Add(k + 3)
		rs.Renewed.Add(k + 4)
		rs.Lapsed.Add(k + 5)
		n.Locks.All.Lapsed.Add(k + 5)
		rs.Prevented.Add(k + 6)
		for j := range rs.Outcomes {
			rs.Outcomes[j].Add(k + 10 + int64(j))
		}
		rs.Refusal("LOCKED").Add(k + 7)
		rs.Hold.Observe(time.Duration(k) * time.Millisecond)
		rs.Wait.Observe(time.Duration(k+1) * time.Millisecond)
	}
	if cluster {
		n.Cluster = &ClusterNumbers{Primaries: 3, SlotsServed: 16384, MapChanges: 61, MapUnconfirmed: 62,
			Moved: 63, Asked: 64, TryAgain: 65, Splits: 66, ShardFollows: 67}
	}
	return n
}

func golden(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant (golden, taken from main before the rows moved here)\n%s",
			what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The Prometheus names, help texts and labels are those of main before the
// rows moved into this package: dashboards and alerts use them.
func TestCounterNamesUnchanged(t *testing.T) {
	ch := make(chan *prometheus.Desc, 100)
	Collector{}.Describe(ch)
	close(ch)
	var descs []string
	for d := range ch {
		descs = append(descs, d.String())
	}
	sameLines(t, "descriptions", descs, golden(t, "metric_descs.golden"))

	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector{Numbers: func() *Numbers { return filled(false) }})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	var heads []string // HELP and TYPE lines, sorted
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "# ") {
			heads = append(heads, l)
		}
	}
	sort.Strings(heads)
	sameLines(t, "HELP and TYPE lines", heads, golden(t, "metric_heads.golden"))

	var names []string
	for _, l := range StatLines(filled(true)) {
		names = append(names, l.Name)
	}
	sameLines(t, "INFO lockproxy / LOCKPROXY STATS lines", names, golden(t, "info_lines.golden"))
}

// One name and one meaning per number: no two rows share a metric name or
// an INFO line (a line sums only its own row's samples), and every line
// shows once.
func TestCounterRowsOneNameEach(t *testing.T) {
	metric, line := map[string]int{}, map[string]int{}
	for i, r := range counters.rows {
		if r.Metric != "" {
			if j, ok := metric[r.Metric]; ok {
				t.Errorf("rows %d and %d both show lockproxy_%s", j, i, r.Metric)
			}
			metric[r.Metric] = i
		}
		if r.Info == nil {
			continue
		}
		for _, name := range r.Info.names {
			if j, ok := line[name]; ok {
				t.Errorf("rows %d and %d both add to INFO line %s", j, i, name)
			}
			line[name] = i
		}
	}
	seen := map[string]bool{}
	for _, l := range StatLines(filled(true)) {
		if seen[l.Name] {
			t.Errorf("INFO line %s shows twice", l.Name)
		}
		seen[l.Name] = true
	}
}

// Each INFO line is the sum of the /metrics series that map to it, and the
// numbers the proxy filled in come out where their name says.
func TestCounterTotalsAddUp(t *testing.T) {
	n := filled(true)
	got := map[string]any{}
	for _, l := range StatLines(n) {
		got[l.Name] = l.Value
	}
	sum := func(get func(*RuleStats) int64) int64 {
		var s int64
		n.Locks.Rules.Each(func(_ string, rs *RuleStats) { s += get(rs) })
		return s
	}
	want := map[string]any{
		"lockproxy_version":                    "9.9",
		"upstream_connections":                 int64(16 + 15), // shared plus dedicated
		"dedicated_sessions":                   int64(15),
		"upstream_dials":                       int64(17),
		"upstream_dial_failures":               int64(18),
		"upstream_errors_timeout":              int64(41),
		"upstream_errors_error":                int64(46),
		"upstream_failed_commands":             int64(19),
		"client_input_bytes":                   int64(20),
		"client_output_bytes":                  int64(21),
		"commands_forward":                     int64(50),
		"commands_server":                      int64(57),
		"upstream_round_trip_count":            int64(8),
		"grants":                               sum(func(rs *RuleStats) int64 { return rs.Grants.Load() }),
		"contention":                           sum(func(rs *RuleStats) int64 { return rs.Contention.Load() }),
		"rewritten":                            sum(func(rs *RuleStats) int64 { return rs.Released.Load() + rs.Renewed.Load() }),
		"token_checked_releases":               sum(func(rs *RuleStats) int64 { return rs.Released.Load() }),
		"token_checked_renewals":               sum(func(rs *RuleStats) int64 { return rs.Renewed.Load() }),
		"refused":                              sum(func(rs *RuleStats) int64 { return rs.Outcome(OutcomeRefused) }),
		"observed":                             sum(func(rs *RuleStats) int64 { return rs.Outcome(OutcomeObserved) }),
		"refused_locked":                       int64(107 + 207),
		"refused_notowner":                     int64(0),
		"successor_deletions_prevented":        sum(func(rs *RuleStats) int64 { return rs.Prevented.Load() }),
		"successor_deletions":                  sum(func(rs *RuleStats) int64 { return rs.Outcome(OutcomeSuccessorDeleted) }),
		"lapsed_leases":                        sum(func(rs *RuleStats) int64 { return rs.Lapsed.Load() }),
		"late_releases":                        sum(func(rs *RuleStats) int64 { return rs.Lapsed.Load() }),
		"stale_fenced_writes_refused":          sum(func(rs *RuleStats) int64 { return rs.Outcome(OutcomeStaleRefused) }),
		"hold_time_count":                      int64(2),
		"wait_time_count":                      int64(2),
		"config_reloads":                       int64(24),
		"config_reload_failures":               int64(25),
		"last_reload":                          "error: line 3: bad",
		"log_warnings":                         int64(26),
		"log_errors":                           int64(27),
		"audit_events_dropped":                 int64(28),
		"epoch":                                int64(29),
		"grants_lost":                          int64(30),
		"grants_undone":                        int64(31),
		"durable_writes_short":                 int64(32),
		"cluster_primaries":                    int64(3),
		"cluster_slots_served":                 int64(16384),
		"cluster_moved_followed":               int64(63),
		"cluster_ask_followed":                 int64(64),
		"cluster_shard_subscriptions_followed": int64(67),
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v", name, got[name], w)
		}
	}

	// The same numbers on /metrics: a line is its series summed.
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector{Numbers: func() *Numbers { return n }})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				series[mf.GetName()] += c.GetValue()
			} else if g := m.GetGauge(); g != nil {
				series[mf.GetName()] += g.GetValue()
			}
		}
	}
	for metric, name := range map[string]string{
		"lockproxy_upstream_connections":              "upstream_connections",
		"lockproxy_grants_total":                      "grants",
		"lockproxy_contention_total":                  "contention",
		"lockproxy_token_checked_releases_total":      "token_checked_releases",
		"lockproxy_late_releases_total":               "late_releases",
		"lockproxy_lapsed_leases_total":               "lapsed_leases",
		"lockproxy_successor_deletions_total":         "successor_deletions",
		"lockproxy_stale_fenced_writes_refused_total": "stale_fenced_writes_refused",
		"lockproxy_cluster_primaries":                 "cluster_primaries",
	} {
		if series[metric] != float64(got[name].(int64)) {
			t.Errorf("%s sums to %v, INFO's %s is %v", metric, series[metric], name, got[name])
		}
	}
	if v := series["lockproxy_upstream_up"]; v != 0 {
		t.Errorf("lockproxy_upstream_up = %v with the verdict down, want 0", v)
	}
}
