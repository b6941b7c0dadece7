package proxy

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// Outcome names what the proxy did, or saw, about a lock.
type Outcome string

const (
	OutcomeRewritten          Outcome = "rewritten"                    // a release or renewal ran token-checked
	OutcomeRefused            Outcome = "refused"                      // the command was refused
	OutcomeObserved           Outcome = "observed"                     // forwarded as is (release: observe, unknown_owner: forward)
	OutcomeSuccessorPrevented Outcome = "successor_deletion_prevented" // a release would have deleted another owner's lock
	OutcomeSuccessorDeleted   Outcome = "successor_deletion"           // a forwarded delete removed another owner's lock
	OutcomeFlushed            Outcome = "flushed"                      // FLUSHALL/FLUSHDB went through
	OutcomeStaleRefused       Outcome = "stale_write_refused"          // a fenced write lost to a newer grant
)

// Event is one intervention, kept in a bounded ring and logged as one line.
// Tokens are never kept or logged whole.
type Event struct {
	Time    time.Time
	Client  string // client address
	Name    string // client name
	Command string
	Key     string
	Rule    string // the rule's pattern
	Outcome Outcome
	Owner   string // the session's owner identity under the rule
	Holder  string // another owner holding the lock then, if any
	Token   string // masked value
	Grant   int64
	Detail  string
}

// events is a fixed-size ring of the most recent events.
type events struct {
	mu   sync.Mutex
	ring []Event
	next int
	full bool
	log  *slog.Logger
}

func newEvents(size int, log *slog.Logger) *events {
	return &events{ring: make([]Event, size), log: log}
}

func (ev *events) add(e Event) {
	// A holder's own release or renewal made token-checked is routine: it is
	// logged at debug, everything else at info. The ring keeps all of them.
	level := slog.LevelInfo
	if e.Outcome == OutcomeRewritten {
		level = slog.LevelDebug
	}
	if ev.log.Enabled(context.Background(), level) {
		ev.log.Log(context.Background(), level, "lock event",
			"outcome", string(e.Outcome), "command", e.Command, "key", e.Key, "rule", e.Rule,
			"client", e.Client, "client_name", e.Name, "owner", e.Owner, "holder", e.Holder,
			"token", e.Token, "grant", e.Grant, "detail", e.Detail)
	}
	ev.mu.Lock()
	ev.ring[ev.next] = e
	ev.next = (ev.next + 1) % len(ev.ring)
	if ev.next == 0 {
		ev.full = true
	}
	ev.mu.Unlock()
}

// recent returns up to n events, newest first, that keep says to keep.
func (ev *events) recent(n int, keep func(*Event) bool) []Event {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	size := ev.next
	if ev.full {
		size = len(ev.ring)
	}
	var out []Event
	for i := 0; i < size && len(out) < n; i++ {
		e := &ev.ring[(ev.next-1-i+len(ev.ring))%len(ev.ring)]
		if keep == nil || keep(e) {
			out = append(out, *e)
		}
	}
	return out
}

// mask shows enough of a token to tell two apart in a log, never all of it.
func mask(v []byte) string { return maskHead(v, len(v)) }

// maskHead masks a value of n bytes of which head holds (at least) the
// first three.
func maskHead(head []byte, n int) string {
	switch {
	case n == 0:
		return ""
	case n < 12:
		return "***(" + strconv.Itoa(n) + " bytes)"
	default:
		return string(head[:min(3, len(head))]) + "***(" + strconv.Itoa(n) + " bytes)"
	}
}
