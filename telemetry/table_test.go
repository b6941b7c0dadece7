package telemetry

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// source is what the test table's rows read: plain values.
type source struct {
	version       string
	grants        map[string]int64 // by rule
	dialsOK       int64
	dialsErr      int64
	refused       map[string]int64 // by code word
	hold          *Histogram
	clusterMapped int64
}

var testTable = NewTable([]Row[*source]{
	{Info: Text("lockproxy_version"), Text: func(s *source) string { return s.version }},
	{Metric: "grants_total", Help: "Locks acquired.", Labels: []string{"rule"}, Info: One("grants"),
		Read: func(s *source, e Emit) {
			for _, r := range []string{"a:*", "b:*"} {
				e(s.grants[r], r)
			}
		}},
	{Metric: "upstream_dials_total", Help: "Dials.", Labels: []string{"result"},
		Info: ByLabel(0, "ok", "upstream_dials", "error", "upstream_dial_failures"),
		Read: func(s *source, e Emit) { e(s.dialsOK, "ok"); e(s.dialsErr, "error") }},
	{Metric: "refusals_total", Help: "Refusals.", Labels: []string{"kind"},
		Info: LowerPrefixed(0, "refused_", "NOTOWNER", "LOCKED"),
		Read: func(s *source, e Emit) {
			for _, k := range []string{"LOCKED", "UNFENCED"} {
				if n := s.refused[k]; n > 0 {
					e(n, k)
				}
			}
		}},
	{Metric: "maxclients", Help: "Max.", Kind: KindGauge, Read: func(s *source, e Emit) { e(7) }},
	{Metric: "lock_hold_seconds", Help: "Holds.", Kind: KindHistogram, Labels: []string{"rule"}, Info: One("hold_time"),
		Hist: func(s *source, e EmitHist) { e(s.hold.Snapshot(), "a:*") }},
	{Metric: "cluster_primaries", Help: "Primaries.", Kind: KindGauge, Info: ClusterOnly(One("cluster_primaries")),
		Read: func(s *source, e Emit) { e(s.clusterMapped) }},
})

func testSource() *source {
	s := &source{version: "1.2\r\n3", grants: map[string]int64{"a:*": 2, "b:*": 3},
		dialsOK: 4, dialsErr: 1, refused: map[string]int64{"LOCKED": 5, "UNFENCED": 1},
		hold: &Histogram{}, clusterMapped: 3}
	s.hold.Observe(2 * time.Millisecond)
	s.hold.Observe(40 * time.Millisecond)
	return s
}

// A line sums the samples that map to it, lines named up front show at 0,
// text loses its line breaks, a histogram is summarised in milliseconds, and
// a cluster-only line shows only in front of a cluster.
func TestInfoSectionFromTable(t *testing.T) {
	s := testSource()
	want := "# Lockproxy\r\n" +
		"lockproxy_version:1.2  3\r\n" +
		"grants:5\r\n" +
		"upstream_dials:4\r\n" +
		"upstream_dial_failures:1\r\n" +
		"refused_notowner:0\r\n" +
		"refused_locked:5\r\n" +
		"refused_unfenced:1\r\n" +
		"hold_time_count:2\r\n" +
		"hold_time_mean_ms:21.000\r\n" +
		"hold_time_p50_ms:2.000\r\n" +
		"hold_time_p99_ms:40.000\r\n" +
		"hold_time_max_ms:40.000\r\n"
	if got := string(InfoSection(testTable.Lines(s, false))); got != want {
		t.Errorf("INFO section:\n%q\nwant\n%q", got, want)
	}
	withCluster := string(InfoSection(testTable.Lines(s, true)))
	if !strings.HasSuffix(withCluster, "hold_time_max_ms:40.000\r\ncluster_primaries:3\r\n") {
		t.Errorf("in front of a cluster the section ends %q, want cluster_primaries:3 last", withCluster[len(withCluster)-60:])
	}
}

// /metrics shows every row with a metric name, by its labels, with its kind;
// rows without one (the version text) are not on it.
func TestPrometheusFromTable(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(tableCollector{testTable, testSource()})
	want := `# HELP lockproxy_grants_total Locks acquired.
# TYPE lockproxy_grants_total counter
lockproxy_grants_total{rule="a:*"} 2
lockproxy_grants_total{rule="b:*"} 3
# HELP lockproxy_lock_hold_seconds Holds.
# TYPE lockproxy_lock_hold_seconds histogram
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.001"} 0
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.0025"} 1
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.005"} 1
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.01"} 1
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.025"} 1
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.05"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.1"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.25"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="0.5"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="1"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="2.5"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="5"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="10"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="30"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="60"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="300"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="900"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="3600"} 2
lockproxy_lock_hold_seconds_bucket{rule="a:*",le="+Inf"} 2
lockproxy_lock_hold_seconds_sum{rule="a:*"} 0.042
lockproxy_lock_hold_seconds_count{rule="a:*"} 2
# HELP lockproxy_maxclients Max.
# TYPE lockproxy_maxclients gauge
lockproxy_maxclients 7
# HELP lockproxy_refusals_total Refusals.
# TYPE lockproxy_refusals_total counter
lockproxy_refusals_total{kind="LOCKED"} 5
lockproxy_refusals_total{kind="UNFENCED"} 1
# HELP lockproxy_upstream_dials_total Dials.
# TYPE lockproxy_upstream_dials_total counter
lockproxy_upstream_dials_total{result="error"} 1
lockproxy_upstream_dials_total{result="ok"} 4
`
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
	// cluster_primaries is a gauge of 3 here: the cluster gate is the
	// rows' (they emit nothing for a single primary), not the renderer's.
	want = strings.Replace(want, "# HELP lockproxy_grants_total", "# HELP lockproxy_cluster_primaries Primaries.\n# TYPE lockproxy_cluster_primaries gauge\nlockproxy_cluster_primaries 3\n# HELP lockproxy_grants_total", 1)
	if got := b.String(); got != want {
		t.Errorf("/metrics:\n%s\nwant\n%s", got, want)
	}
}

type tableCollector struct {
	t *Table[*source]
	s *source
}

func (c tableCollector) Describe(ch chan<- *prometheus.Desc) { c.t.Describe(ch) }
func (c tableCollector) Collect(ch chan<- prometheus.Metric) { c.t.Collect(c.s, ch) }
