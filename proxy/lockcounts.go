package proxy

import (
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
)

// Hooks called from apply (effects.go) as replies come in: a lock effect
// as telemetry.LockStats counts it.

func ruleLabel(r *policy.Rule) string {
	if r == nil {
		return telemetry.NoRule
	}
	return r.Pattern.String()
}

// contended records a SET NX that found the lock taken.
func (p *Proxy) contended(e *rewrite.Effect, now time.Time) {
	p.ops.locks.Contended(ruleLabel(e.Rule), e.Owner, e.Key, now)
}

// granted records an acquisition and how long its owner waited for it.
func (p *Proxy) granted(e *rewrite.Effect, now time.Time) {
	p.ops.locks.Granted(ruleLabel(e.Rule), e.Owner, e.Key, now)
}

// released counts a release that ran token-checked: how long the lock was
// held and whether the release came after the lease ran out, as the
// Release script read them from the owner's record.
func (p *Proxy) released(e *rewrite.Effect) {
	p.ops.locks.Released(ruleLabel(e.Rule), e.Held, e.Lapsed)
}

// record keeps an event: the audit ring and the counters by rule and
// outcome at once, its log line and audit-file line through the event
// writer's queue.
func (p *Proxy) record(ev Event, e *rewrite.Effect) {
	p.events.Add(ev)
	p.ops.locks.Counted(ruleLabel(e.Rule), telemetry.Counts{
		Outcome: ev.Outcome,
		Renewed: e.Kind == rewrite.Renewed,
		Refused: e.Kind == rewrite.Refused, Reason: e.Reason,
		// As stats.successorPrevented counts them.
		Prevented: ev.Outcome == OutcomeSuccessorPrevented || (e.Kind == rewrite.Refused && e.Holder != ""),
	})
	p.ops.writer.Push(ev)
}
