// Package telemetry owns how lockproxy records and reports what it did:
// duration histograms and their snapshots (histogram.go), lock events and
// the bounded ring LOCKPROXY AUDIT reads (events.go), the writer that takes
// an event's log line and audit-file line off the reply path (eventwriter.go)
// and the audit file with its rotation (auditfile.go).
//
// It must not import package proxy nor reach into its structs: the proxy
// hands it values (an Event, a duration, a snapshot) and reads back values
// (a Snapshot, a count of dropped events). Nothing here waits for Valkey,
// and nothing on a command's path waits for a disk: writing lines is the
// Writer's goroutine's.
package telemetry
