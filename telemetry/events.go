package telemetry

import (
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

// Event is one intervention, kept in a bounded ring and, by the event
// writer (eventwriter.go), logged as one line. Tokens are never kept or
// logged whole.
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

// Ring is a fixed-size ring of the most recent events. Adding to it is a
// copy under a mutex, cheap enough for the reply path that records Ring.
type Ring struct {
	mu   sync.Mutex
	ring []Event
	next int
	full bool
}

func NewRing(size int) *Ring {
	return &Ring{ring: make([]Event, size)}
}

func (ev *Ring) Add(e Event) {
	ev.mu.Lock()
	ev.ring[ev.next] = e
	ev.next = (ev.next + 1) % len(ev.ring)
	if ev.next == 0 {
		ev.full = true
	}
	ev.mu.Unlock()
}

// Recent returns up to n events, newest first, that keep says to keep.
func (ev *Ring) Recent(n int, keep func(*Event) bool) []Event {
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

// Mask shows enough of a token to tell two apart in a log, never all of it.
func Mask(v []byte) string { return MaskHead(v, len(v)) }

// MaskHead masks a value of n bytes of which head holds (at least) the
// first three.
func MaskHead(head []byte, n int) string {
	switch {
	case n == 0:
		return ""
	case n < 12:
		return "***(" + strconv.Itoa(n) + " bytes)"
	default:
		return string(head[:min(3, len(head))]) + "***(" + strconv.Itoa(n) + " bytes)"
	}
}
