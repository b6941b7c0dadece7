package proxy

import (
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
)

type waitKey struct{ owner, key string }

const maxWaits = 1 << 16

// Hooks called from apply (package locks: Keeper.Apply, through
// lockhost.go) as replies come in.

// contended records a SET NX that found the lock taken.
func (p *Proxy) contended(e *rewrite.Effect, now time.Time) {
	p.ops.rule(e.Rule).Contention.Add(1)
	p.ops.all.Contention.Add(1)
	o := p.ops
	k := waitKey{e.Owner, string(e.Key)}
	o.waitMu.Lock()
	defer o.waitMu.Unlock()
	if _, ok := o.waits[k]; ok {
		return
	}
	if len(o.waits) >= maxWaits && now.Sub(o.waitSwept) >= time.Second {
		o.waitSwept = now
		for wk, t := range o.waits {
			if now.Sub(t) > 10*time.Minute {
				delete(o.waits, wk)
			}
		}
	}
	if len(o.waits) >= maxWaits {
		return // full: this wait goes unmeasured
	}
	o.waits[k] = now
}

// granted records an acquisition and how long its owner waited for it (0
// when its first try succeeded).
func (p *Proxy) granted(e *rewrite.Effect, now time.Time) {
	o := p.ops
	var wait time.Duration
	o.waitMu.Lock()
	if len(o.waits) > 0 { // an uncontended grant builds no key to look up
		k := waitKey{e.Owner, string(e.Key)}
		if t, ok := o.waits[k]; ok {
			wait = now.Sub(t)
			delete(o.waits, k)
		}
	}
	o.waitMu.Unlock()
	rs := o.rule(e.Rule)
	rs.Grants.Add(1)
	rs.Wait.Observe(wait)
	o.all.Grants.Add(1)
	o.all.Wait.Observe(wait)
}

// released counts a release that ran token-checked: how long the lock was
// held and whether the release came after the lease ran out, as the
// Release script read them from the owner's record.
func (p *Proxy) released(e *rewrite.Effect) {
	rs := p.ops.rule(e.Rule)
	rs.Released.Add(1)
	p.ops.all.Released.Add(1)
	if e.Lapsed {
		rs.Lapsed.Add(1)
		p.ops.all.Lapsed.Add(1)
	}
	if e.Held >= 0 {
		rs.Hold.Observe(e.Held)
		p.ops.all.Hold.Observe(e.Held)
	}
}

// record keeps an event: the audit ring and the counters by rule and
// outcome at once, its log line and audit-file line through the event
// writer's queue.
func (p *Proxy) record(ev Event, e *rewrite.Effect) {
	p.events.Add(ev)
	rs := p.ops.rule(e.Rule)
	if i := telemetry.OutcomeIndex(ev.Outcome); i >= 0 {
		rs.Outcomes[i].Add(1)
		p.ops.all.Outcomes[i].Add(1)
	}
	switch e.Kind {
	case rewrite.Renewed:
		rs.Renewed.Add(1)
		p.ops.all.Renewed.Add(1)
	case rewrite.Refused:
		kind := refusalKind(e.Reason)
		rs.Refusal(kind).Add(1)
		p.ops.all.Refusal(kind).Add(1)
	}
	// As stats.successorPrevented counts them: a release that found the
	// lock another owner's, or a refusal while another owner held it.
	if ev.Outcome == OutcomeSuccessorPrevented || (e.Kind == rewrite.Refused && e.Holder != "") {
		rs.Prevented.Add(1)
		p.ops.all.Prevented.Add(1)
	}
	p.ops.writer.Push(ev)
}

// refusalKind is the code word an error starts with (NOTOWNER, LOCKED, ...).
func refusalKind(reason string) string {
	w, _, _ := strings.Cut(reason, " ")
	if w == "" {
		return "OTHER"
	}
	return w
}
