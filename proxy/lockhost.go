package proxy

import (
	"context"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
)

// The seam to package locks: the proxy is its locks.Host (lockHost), a
// session its locks.Client.

// lockHost is the proxy as package locks sees it.
type lockHost struct{ p *Proxy }

// Eval runs an undo script in database db, on a connection of its own to
// key's node, within the dial timeout, and returns its integer reply.
func (h lockHost) Eval(key []byte, db int, script string, keys []string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), h.p.opts.Upstream.DialTimeout.D())
	defer cancel()
	kc, done := h.p.keyClient(key)
	defer done()
	c := kc.Conn()
	defer c.Close()
	if err := c.Select(ctx, db).Err(); err != nil {
		return 0, err
	}
	return c.Eval(ctx, script, keys, args...).Int64()
}

func (h lockHost) Own(nc net.Conn, n int) { h.p.own.Add(nc, n) } // clients.OwnLines

// The hooks called from locks.Keeper.Apply as replies come in: a lock
// effect as telemetry.LockStats counts it.

// Contended records a SET NX that found the lock taken.
func (h lockHost) Contended(e *rewrite.Effect, now time.Time) {
	h.p.ops.locks.Contended(ruleLabel(e.Rule), e.Owner, e.Key, now)
}

// Granted records an acquisition and how long its owner waited for it.
func (h lockHost) Granted(e *rewrite.Effect, now time.Time) {
	h.p.ops.locks.Granted(ruleLabel(e.Rule), e.Owner, e.Key, now)
}

// Released counts a release that ran token-checked: how long the lock was
// held and whether the release came after the lease ran out, as the
// Release script read them from the owner's record.
func (h lockHost) Released(e *rewrite.Effect) {
	h.p.ops.locks.Released(ruleLabel(e.Rule), e.Held, e.Lapsed)
}

// Record keeps an event: the audit ring and the counters by rule and
// outcome at once, its log line and audit-file line through the event
// writer's queue.
func (h lockHost) Record(ev Event, e *rewrite.Effect) {
	p := h.p
	p.events.Add(ev)
	p.ops.locks.Counted(ruleLabel(e.Rule), telemetry.Counts{
		Outcome: ev.Outcome,
		Renewed: e.Kind == rewrite.Renewed,
		Refused: e.Kind == rewrite.Refused, Reason: e.Reason,
		// The successor_deletions_prevented counter (telemetry.Counts):
		// a release that found the lock another owner's, or a refusal
		// while another owner held it.
		Prevented: ev.Outcome == OutcomeSuccessorPrevented || (e.Kind == rewrite.Refused && e.Holder != ""),
	})
	p.ops.writer.Push(ev)
}

// ruleLabel is the label a rule's counters go under.
func ruleLabel(r *policy.Rule) string {
	if r == nil {
		return telemetry.NoRule
	}
	return r.Pattern.String()
}

// Addr, Name and Grants make a session a locks.Client.
func (s *session) Addr() string          { return s.addr }
func (s *session) Name() string          { return s.nameSnapshot() }
func (s *session) Grants() *locks.Grants { return &s.grants }

// apply records what a command's reply meant (locks.Keeper.Apply).
func (s *session) apply(effects []rewrite.Effect, reply []byte) { s.p.locks.Apply(s, effects, reply) }

// foundMissing: Valkey has no record of this session's grant of key.
func (s *session) foundMissing(key string) { s.p.locks.FoundMissing(s, key) }
