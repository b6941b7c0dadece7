// Package telemetry owns how lockproxy records and reports what it did: the
// counter structs (the per-rule counts in rulestats.go, what lock effects
// add to them and how long owners waited to acquire in lockstats.go, client
// bytes and log levels in counting.go), duration histograms and their snapshots
// (histogram.go), the round-trip histogram per command family, written once
// per batch of replies read (roundtrip.go), the per-command counts, error
// code words and client-seen latencies in fixed arrays indexed by the
// proxy's command label (commandstats.go), the slow log's ring and its log
// lines (slowlog.go), lock events and the bounded ring LOCKPROXY AUDIT reads
// (events.go), the writer that takes an event's log line and audit-file
// line off the reply path (eventwriter.go), the audit file with its
// rotation (auditfile.go), and the counter table: every number lockproxy
// reports, one row each with its Prometheus name, help text and INFO /
// STATS lines (counters.go), read from a Numbers snapshot (numbers.go),
// with the generic row type (table.go) and its renderers: INFO lockproxy
// and LOCKPROXY STATS lines (lines.go) and /metrics (prometheus.go, whose
// Collector asks for a snapshot at each scrape). testdata holds the names
// as they were before the rows moved here; they never change, because
// dashboards and alerts use them.
//
// It must not import package proxy nor reach into its structs. The proxy
// fills in a Numbers (proxy/numbers.go) with plain values read from its
// atomics at render time, the per-rule counters being this package's own
// LockStats; the rows read only that. Otherwise the proxy hands it values
// (an Event, a duration, a count) and reads values back (a Snapshot,
// Lines). The counters incremented on a command's path stay plain
// atomics where they are; nothing here waits for Valkey, and nothing on a
// command's path waits for a disk: writing lines is the Writer's
// goroutine's.
package telemetry
