package proxy

import (
	"bytes"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Owner is the session as the rewrite package sees it: who the client is
// under a rule's session scope (locks.Owner).
func (s *session) Owner(r *policy.Rule) string {
	return locks.Owner(r, s.name, s.host, s.connOwner, s.userOwner)
}

// Proto is the RESP version the client speaks, for the Fenced script.
func (s *session) Proto() int { return s.proto }

// lockPlan applies the lock rules to one command. It reports whether it
// dealt with the command; false means "route it as usual".
func (s *session) lockPlan(cmd resp.Command) bool {
	d := s.p.decider.Load()
	if !d.Active() {
		return false
	}
	if d.Table == nil {
		if dd := s.learned.dialed; dd != nil && dd.err != nil && dd.key == s.key() {
			// The connection this command goes on failed to dial (it
			// took this command's reply_timeout): routed as usual, it is
			// answered with the dial's error (poolConn) and sends
			// nothing; reading the table now would wait a second bound.
			return false
		}
		if s.lp != nil && !s.p.tableReady() {
			s.offLoop(func() { s.p.loadTable() })
			return true
		}
		d = s.p.loadTable()
		if d.Table == nil {
			s.local(resp.AppendError(nil, s.p.noTableError()))
			return true
		}
	}
	if s.lp == nil && s.ded == nil && s.p.cl == nil {
		// A client on a goroutine of its own (TLS): connect before
		// deciding, as an event loop does (off the loop, before the
		// lock rules: route's connFirst). A new
		// connection learns the epoch's clues (epoch.go), and a plan
		// carries those it was decided with: one decided before a
		// restart of Valkey and sent on the connection that found it
		// restarted would mint under the old process's epoch.
		if c := s.shared; c == nil || s.sharedKey != s.key() || c.Dead() {
			if s.target() == nil {
				return true // answered with the dial's error
			}
		}
	}
	plan := d.Decide(cmd.Args, s, s.keys[:0])
	if plan.Kind == rewrite.NeedKeys {
		var keys []keyspec.KeyWithFlags
		var err error
		switch m := s.learned.movable; {
		case m != nil && bytes.Equal(m.raw, cmd.Raw):
			keys, err = m.keys, m.err
			s.learned.movable = nil
		case s.lp != nil:
			// A round trip on the side connection: off the loop.
			c := cmd.Clone()
			s.offLoop(func() {
				keys, err := s.p.getKeys(c.Args)
				s.learned.movable = &movableKeys{raw: c.Raw, keys: keys, err: err}
			})
			return true
		default:
			keys, err = s.p.getKeys(cmd.Args)
		}
		if err != nil {
			// Valkey's ERR: it names no key, or Valkey refuses it too;
			// anything else: refused (fail closed).
			plan = rewrite.KeysUnknown(cmd.Args, err)
		} else {
			plan = d.DecideKeys(cmd.Args, keys, s)
		}
	}
	if plan.Script == rewrite.Flush && s.p.cl != nil {
		// In front of a cluster a flush comes here only on a connection
		// of the session's own (a transaction): it goes to that node as
		// it came, the epoch clue raised around it as fanOut raises it
		// for a shared session's (cluster_epoch.go).
		top, ok := s.raiseBeforeFlush(cmd)
		if !ok {
			return true // put back, to be handled again once raised
		}
		plan = rewrite.Plan{Effects: plan.Effects, Learn: func(bool) { s.p.locks.RaiseClusterEpoch(top) }}
	}
	if plan.Kind != rewrite.Forward || len(plan.Effects) > 0 {
		s.family = commands.FamLock
	}
	switch plan.Kind {
	case rewrite.Forward:
		if len(plan.Effects) == 0 && plan.Learn == nil {
			return false
		}
		hook := s.p.locks.ForwardHook(s, plan.Effects, plan.Learn)
		if s.ded != nil && s.inMulti {
			// Learned at EXEC, from the command's own element: a discarded
			// or aborted transaction teaches nothing.
			s.queueInMulti(cmd.Raw, nil, hook)
			return true
		}
		if !s.p.cmds().Kind(cmd.Args[0]).Forwarded() {
			// A command with its own routing (none that touch keys today):
			// record what was seen and let the usual path send it.
			s.apply(plan.Effects, nil)
			return false
		}
		s.forward(cmd.Raw, hook)
	case rewrite.Refuse:
		if s.refuseTyped(cmd, d, plan) {
			return true // WRONGTYPE or the refusal, from Valkey (typegate.go)
		}
		s.apply(plan.Effects, nil)
		msg := plan.Err
		if s.ded != nil && s.inMulti {
			// Refused while queued: Valkey must see a queue-time error so
			// that EXEC aborts with EXECABORT, as it does for its own. An
			// unknown command is such an error; the client sees ours.
			s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"),
				func([]byte) []byte { return resp.AppendError(nil, msg) }, nil)
			return true
		}
		s.local(resp.AppendError(nil, msg))
	case rewrite.Run:
		s.run(plan)
	}
	return true
}

// run sends a plan's script as EVALSHA. Every upstream connection loads
// lockproxy's scripts when it opens, and a wrapper is loaded by its first
// use, so NOSCRIPT is rare: after a SCRIPT FLUSH, or for a wrapper a
// restarted Valkey no longer holds. The command is then sent again as EVAL
// when nothing of the session's is in flight behind it (package upstream's
// retry.go), and answered with an error that says it did not run
// otherwise. Inside MULTI, with more commands of the client's already read
// behind it, or on a wrapper's first use, it goes as EVAL straight away.
func (s *session) run(plan rewrite.Plan) {
	sc := plan.Script
	hook := s.p.locks.RunHook(s, plan, s.proto)
	if s.ded != nil && s.ded.Streaming() {
		if sc.Client != "" && len(plan.Effects) == 0 {
			// A script under the monitor: it keeps the records inside
			// Valkey, so its reply needs nothing of the proxy's and
			// may pass unmatched, as a subscriber's replies do (RESP3;
			// under RESP2 Valkey refuses it, in its own words).
			s.forward(locks.EncodeScript(plan, false), nil)
			return
		}
		s.local(resp.AppendError(nil, errStreamLock))
		return
	}
	if s.p.cl != nil && !s.routeScript(plan.Keys) {
		return
	}
	if s.p.cl != nil && plan.Clue > 0 && !s.reclue(plan.Args, plan.Clue) {
		return
	}
	if s.ded != nil && s.inMulti {
		s.queueRun(plan, hook) // durable.go
		return
	}
	if plan.Durable != nil && !sc.RO {
		// A client's script that declares a durable rule's lock or
		// writes a key one guards (durable.go).
		s.runDurableScript(plan)
		return
	}
	if d := locks.Durability(plan); d != nil {
		// In front of a cluster the WAIT goes on the connection to the
		// node the script went to (s.node, routeScript): it counts that
		// node's replicas.
		s.runDurable(plan, d)
		return
	}
	if s.rd.Buffered() > 0 || s.firstUse(sc) || sc == rewrite.Flush || sc.Fn != "" {
		// More commands are already here behind this one: EVAL needs no
		// retry that could overtake them. A wrapper's first use: EVAL
		// loads it. A flush's script is not preloaded (flushes are rare):
		// always EVAL. An FCALL has no SHA1 to retry.
		s.forward(locks.EncodeScript(plan, false), hook)
		return
	}
	sha := locks.EncodeScript(plan, true)
	s.forwardRetry(sha, sha, hook) // the EVAL twin is built only on NOSCRIPT
}
