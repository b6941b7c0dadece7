package telemetry

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// eventQueue is how many lock events may wait for the writer. A burst of
// refusals larger than this, while the log or the disk is slow, loses log
// and audit-file lines (counted), never replies.
const eventQueue = 4096

// Writer takes the slow half of recording a lock event off the reply
// path: its log line (slog, whose handler may write to a slow pipe) and its
// audit-file line, with rotation. The reply hook that records an event runs
// on an event loop or an upstream reader, so a write stalled there would
// stall every client behind it; instead the event is handed over a bounded
// queue to one goroutine that writes lines in the order events happened.
// When the queue is full the event's lines are dropped and counted
// (audit_events_dropped); the ring behind LOCKPROXY AUDIT is kept by the
// hook itself and misses nothing.
type Writer struct {
	q       chan Event
	quit    chan struct{}
	done    chan struct{}
	log     *slog.Logger
	audit   *AuditFile   // nil when no audit file is configured
	dropped atomic.Int64 // events whose lines were dropped: the queue was full
}

func NewWriter(log *slog.Logger, audit *AuditFile) *Writer {
	w := &Writer{
		q: make(chan Event, eventQueue), quit: make(chan struct{}), done: make(chan struct{}),
		log: log, audit: audit,
	}
	go w.run()
	return w
}

// eventLevel is the level of an event's log line: a holder's own release or
// renewal made token-checked is routine and logged at debug, everything
// else at info.
func eventLevel(e *Event) slog.Level {
	if e.Outcome == OutcomeRewritten {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// Push queues e for its log and audit lines without waiting; an event that
// would be written nowhere is not queued at all.
func (w *Writer) Push(e Event) {
	if w.audit == nil && !w.log.Enabled(context.Background(), eventLevel(&e)) {
		return
	}
	select {
	case w.q <- e:
	default:
		w.dropped.Add(1)
	}
}

func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case e := <-w.q:
			w.write(e)
		case <-w.quit:
			// Shutdown: what was queued before it is still written.
			for {
				select {
				case e := <-w.q:
					w.write(e)
				default:
					return
				}
			}
		}
	}
}

func (w *Writer) write(e Event) {
	if level := eventLevel(&e); w.log.Enabled(context.Background(), level) {
		w.log.Log(context.Background(), level, "lock event",
			"outcome", string(e.Outcome), "command", e.Command, "key", e.Key, "rule", e.Rule,
			"client", e.Client, "client_name", e.Name, "owner", e.Owner, "holder", e.Holder,
			"token", e.Token, "grant", e.Grant, "detail", e.Detail)
	}
	if w.audit != nil {
		w.audit.Write(e, w.log)
	}
}

// Close writes what is queued, stops the writer and closes the audit file.
func (w *Writer) Close() {
	close(w.quit)
	<-w.done
	if w.audit != nil {
		w.audit.Close()
	}
}

// Dropped is how many events lost their log and audit-file lines because the
// queue was full (audit_events_dropped).
func (w *Writer) Dropped() int64 { return w.dropped.Load() }
