package telemetry

import (
	"strings"
	"sync"
	"time"
)

// NoRule labels what happened outside any rule (FLUSHALL, FLUSHDB).
const NoRule = "(none)"

// LockStats counts what lock commands did, by rule (the rule's pattern, so
// the counts survive a reload that keeps it; NoRule outside any) and in
// total, and keeps the first contention of each owner and key still
// waiting to acquire, so that a grant knows how long its owner waited.
// The proxy calls it as replies come in; its methods are safe for
// concurrent use.
type LockStats struct {
	Rules RuleSet
	All   RuleStats

	waitMu sync.Mutex
	waits  map[waitKey]time.Time
	// waitSwept is when a full waits table was last swept: at most once a
	// second, so a flood of contended acquisitions does not sweep it each.
	waitSwept time.Time
}

type waitKey struct{ owner, key string }

// maxWaits bounds the contentions remembered; past it, a wait goes
// unmeasured.
const maxWaits = 1 << 16

// Rule is label's counters.
func (l *LockStats) Rule(label string) *RuleStats { return l.Rules.Rule(label) }

// Contended counts a SET NX that found the lock key taken, and remembers
// when owner first waited for it.
func (l *LockStats) Contended(rule, owner string, key []byte, now time.Time) {
	l.Rules.Rule(rule).Contention.Add(1)
	l.All.Contention.Add(1)
	k := waitKey{owner, string(key)}
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	if l.waits == nil {
		l.waits = map[waitKey]time.Time{}
	}
	if _, ok := l.waits[k]; ok {
		return
	}
	if len(l.waits) >= maxWaits && now.Sub(l.waitSwept) >= time.Second {
		l.waitSwept = now
		for wk, t := range l.waits {
			if now.Sub(t) > 10*time.Minute {
				delete(l.waits, wk)
			}
		}
	}
	if len(l.waits) >= maxWaits {
		return // full: this wait goes unmeasured
	}
	l.waits[k] = now
}

// Granted counts an acquisition and how long its owner waited for it (0
// when its first try succeeded).
func (l *LockStats) Granted(rule, owner string, key []byte, now time.Time) {
	var wait time.Duration
	l.waitMu.Lock()
	if len(l.waits) > 0 { // an uncontended grant builds no key to look up
		k := waitKey{owner, string(key)}
		if t, ok := l.waits[k]; ok {
			wait = now.Sub(t)
			delete(l.waits, k)
		}
	}
	l.waitMu.Unlock()
	rs := l.Rules.Rule(rule)
	rs.Grants.Add(1)
	rs.Wait.Observe(wait)
	l.All.Grants.Add(1)
	l.All.Wait.Observe(wait)
}

// Released counts a release that ran token-checked: how long the lock was
// held (held < 0: unknown) and whether it came after the lease ran out.
func (l *LockStats) Released(rule string, held time.Duration, lapsed bool) {
	rs := l.Rules.Rule(rule)
	rs.Released.Add(1)
	l.All.Released.Add(1)
	if lapsed {
		rs.Lapsed.Add(1)
		l.All.Lapsed.Add(1)
	}
	if held >= 0 {
		rs.Hold.Observe(held)
		l.All.Hold.Observe(held)
	}
}

// Counts is what one lock event adds to its rule's counters.
type Counts struct {
	Outcome Outcome
	// Renewed: a lease change that ran token-checked. Refused: a refusal,
	// counted by the code word Reason (its error) starts with.
	Renewed, Refused bool
	Reason           string
	// Prevented: a release that found the lock another owner's, or a
	// refusal while another owner held it.
	Prevented bool
}

// Counted counts a lock event under rule.
func (l *LockStats) Counted(rule string, c Counts) {
	rs := l.Rules.Rule(rule)
	if i := OutcomeIndex(c.Outcome); i >= 0 {
		rs.Outcomes[i].Add(1)
		l.All.Outcomes[i].Add(1)
	}
	switch {
	case c.Renewed:
		rs.Renewed.Add(1)
		l.All.Renewed.Add(1)
	case c.Refused:
		kind := refusalKind(c.Reason)
		rs.Refusal(kind).Add(1)
		l.All.Refusal(kind).Add(1)
	}
	if c.Prevented {
		rs.Prevented.Add(1)
		l.All.Prevented.Add(1)
	}
}

// refusalKind is the code word an error starts with (NOTOWNER, LOCKED, ...).
func refusalKind(reason string) string {
	w, _, _ := strings.Cut(reason, " ")
	if w == "" {
		return "OTHER"
	}
	return w
}
