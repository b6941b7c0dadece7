package telemetry

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// Table is every number a program reports about itself, once: each row has
// one name and one meaning, and the three renderers — /metrics
// (prometheus.go), INFO lockproxy and LOCKPROXY STATS (lines.go) — iterate
// it. S is the source the rows read their samples from (the proxy); this
// package never looks inside it, only calls the rows' readers with it.
// A row's samples are read at render time; nothing here runs on a
// command's path.
type Table[S any] struct {
	rows  []Row[S]
	descs []*prometheus.Desc // per row, nil when /metrics does not show it
}

// NewTable makes a table of rows, in the order the renderers show them.
func NewTable[S any](rows []Row[S]) *Table[S] {
	t := &Table[S]{rows: rows, descs: make([]*prometheus.Desc, len(rows))}
	for i := range rows {
		if r := &rows[i]; r.Metric != "" {
			t.descs[i] = prometheus.NewDesc("lockproxy_"+r.Metric, r.Help, r.Labels, nil)
		}
	}
	return t
}

// Kind is what a row's samples are.
type Kind uint8

const (
	KindCounter   Kind = iota // a count that only rises (the zero value)
	KindGauge                 // a value now
	KindHistogram             // a distribution of durations
)

type (
	// Emit gives one sample of a row, with its label values in the order
	// of the row's Labels.
	Emit func(v int64, labels ...string)
	// EmitHist gives one histogram of a row.
	EmitHist func(h Snapshot, labels ...string)
)

// Row is one number reported.
type Row[S any] struct {
	// Metric is the name on /metrics after "lockproxy_"; "" when only INFO
	// and STATS show the row. Names never change: dashboards and alerts
	// use them.
	Metric string
	Help   string
	Kind   Kind
	Labels []string
	// Info maps the row's samples onto INFO / STATS lines; nil: /metrics
	// only.
	Info *Lines
	// Read gives the row's samples (counters and gauges), Hist its
	// histograms, Text the value of a text line (INFO and STATS only).
	Read func(src S, e Emit)
	Hist func(src S, e EmitHist)
	Text func(src S) string
}

// Lines says which INFO / STATS line each sample of a row adds to: a line
// is the sum of the samples that map to it.
type Lines struct {
	// names are always shown, at 0 when no sample adds to them, in order.
	names []string
	// line names a sample's line from its labels; nil: names[0]. A sample
	// whose line is "" is not shown.
	line func(labels []string) string
	// cluster: shown only in front of a cluster.
	cluster bool
}

// One is a single line that every sample of the row adds to.
func One(name string) *Lines { return &Lines{names: []string{name}} }

// Text is a text line (a row with Text).
func Text(name string) *Lines { return &Lines{names: []string{name}} }

// ClusterOnly shows l only in front of a cluster.
func ClusterOnly(l *Lines) *Lines { l.cluster = true; return l }

// ByLabel maps label i's values to lines: pairs of value, line name.
func ByLabel(i int, pairs ...string) *Lines {
	m := map[string]string{}
	l := &Lines{}
	for j := 0; j+1 < len(pairs); j += 2 {
		m[pairs[j]] = pairs[j+1]
		l.names = append(l.names, pairs[j+1])
	}
	l.line = func(labels []string) string { return m[labels[i]] }
	return l
}

// Prefixed shows label i's value after a prefix: one line per value, those
// in always shown even at 0.
func Prefixed(i int, prefix string, always ...string) *Lines {
	l := &Lines{line: func(labels []string) string { return prefix + labels[i] }}
	for _, v := range always {
		l.names = append(l.names, prefix+v)
	}
	return l
}

// LowerPrefixed is Prefixed with the value lower-cased (refused_notowner).
func LowerPrefixed(i int, prefix string, always ...string) *Lines {
	l := &Lines{line: func(labels []string) string { return prefix + strings.ToLower(labels[i]) }}
	for _, v := range always {
		l.names = append(l.names, prefix+strings.ToLower(v))
	}
	return l
}
