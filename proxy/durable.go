package proxy

import (
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Durable commands (a rule's durability, issue 29): what the session
// sends, on which connection and in what order. Package locks pairs the
// replies and answers the client (its durable*.go); the WAIT goes right
// behind the command on the same connection, and the command's own reply
// is muted (the WAIT's hook answers for both).

// runDurable sends an acquisition (locks.AcquireWait), a renewal (Holder)
// or a fenced write (locks.WriteWait), then its WAIT.
func (s *session) runDurable(plan rewrite.Plan, d *policy.DurabilityConfig) {
	var onScript, onWait func([]byte) []byte
	if plan.Script == rewrite.Acquire {
		onScript, onWait = s.p.locks.AcquireWait(s, plan, d, s.db, s.proto)
	} else {
		onScript, onWait = s.p.locks.WriteWait(s, plan, d, s.proto)
	}
	muted := s.mute
	s.mute = true
	sha := locks.EncodeScript(plan, true)
	s.forwardRetry(sha, sha, onScript)
	s.mute = muted
	s.forward(locks.WaitCommand(d), onWait)
}

// runDurableScript sends the counters' read, a monitored script and its
// WAIT (locks.ScriptWait).
func (s *session) runDurableScript(plan rewrite.Plan) {
	sc := plan.Script
	dl := locks.DurableLocks(plan, s.p.cl != nil)
	onCounters, onScript, onWait := s.p.locks.ScriptWait(plan, dl, s.db, s.proto)
	muted := s.mute
	s.mute = true
	if onCounters != nil {
		s.forward(locks.CountersRead(dl), onCounters)
	}
	if s.firstUse(sc) || sc.Fn != "" {
		s.forward(locks.EncodeScript(plan, false), onScript)
	} else {
		sha := locks.EncodeScript(plan, true)
		s.forwardRetry(sha, sha, onScript)
	}
	s.mute = muted
	s.forward(locks.WaitCommand(plan.Durable), onWait)
}

// queueRun queues a plan's script in a transaction; hook shapes its
// element of EXEC's reply and records its effects (run's). Under a
// durable rule the element is answered once EXEC's WAIT is (locks.Txn*).
func (s *session) queueRun(plan rewrite.Plan, hook func([]byte) []byte) {
	raw := locks.EncodeScript(plan, false)
	k := s.p.locks
	if plan.Durable != nil && !plan.Script.RO {
		// A client's script, behind the read of its locks' counters.
		tx := s.durableTxn(plan.Durable)
		dl := locks.DurableLocks(plan, s.p.cl != nil)
		onCounters, onEl := k.TxnScript(plan, dl, tx, s.db, s.execDBOr, hook)
		if onCounters != nil {
			muted := s.mute
			s.mute = true
			s.queueInMulti(locks.CountersRead(dl), nil, onCounters)
			s.mute = muted
		}
		s.queueInMulti(raw, nil, onEl)
		return
	}
	switch d := locks.Durability(plan); {
	case d == nil:
		s.queueInMulti(raw, nil, hook)
	case plan.Script != rewrite.Acquire:
		s.queueInMulti(raw, nil, k.TxnWrite(s.durableTxn(d), plan, d, hook))
	default:
		s.queueInMulti(raw, nil, k.TxnAcquire(s, plan, d, s.durableTxn(d), s.db, s.proto, s.execDBOr))
	}
}

// durableTxn returns the session's transaction's durability, raised to d.
func (s *session) durableTxn(d *policy.DurabilityConfig) *locks.Txn {
	if s.multiDur == nil {
		s.multiDur = &locks.Txn{}
	}
	s.multiDur.Raise(d)
	return s.multiDur
}

// execDBOr is, while EXEC's reply is shaped, the database the transaction's
// last SELECT so far switched to, or db (the session's before it).
func (s *session) execDBOr(db int) int {
	if v := s.execDB.Load(); v >= 0 {
		return int(v)
	}
	return db
}

// execDurable sends EXEC, its reply held back, then the WAIT, and answers
// the client from both (locks.ExecWait): shape (execHook) folds EXEC's
// reply once the WAIT's answer is in tx.
func (s *session) execDurable(raw []byte, shape func([]byte) []byte, tx *locks.Txn) {
	onExec, onWait := locks.ExecWait(tx, shape)
	muted := s.mute
	s.mute = true
	s.forward(raw, onExec)
	s.mute = muted
	s.forward(tx.WaitCommand(), onWait)
}
