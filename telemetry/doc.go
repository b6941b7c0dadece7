// Package telemetry owns how lockproxy records and reports what it did: the
// counter structs (the per-rule counts in rulestats.go, what lock effects
// add to them and how long owners waited to acquire in lockstats.go, client
// bytes and log levels in counting.go), duration histograms and their snapshots
// (histogram.go), lock events and the bounded ring LOCKPROXY AUDIT reads
// (events.go), the writer that takes an event's log line and audit-file
// line off the reply path (eventwriter.go), the audit file with its
// rotation (auditfile.go), and the counter table's row type (table.go)
// with its renderers: INFO lockproxy and LOCKPROXY STATS lines (lines.go)
// and /metrics (prometheus.go).
//
// It must not import package proxy nor reach into its structs. The table
// is generic over the source its rows read: the proxy writes the rows
// (proxy/counters.go), each a small function from its own state to
// samples, and this package only calls them. Otherwise the proxy hands it
// values (an Event, a duration, a count) and reads values back (a Snapshot,
// Lines). Nothing here waits for Valkey, and nothing on a command's path
// waits for a disk: writing lines is the Writer's goroutine's.
package telemetry
