package proxy

import (
	"bytes"
	"sync"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Durable transactions (issue 29): commands and scripts queued in MULTI
// under a rule's durability. Nothing queued runs before EXEC, so one WAIT
// follows EXEC for all of them, sent right behind it on the session's own
// connection (it counts the replicas that acknowledged the transaction's
// writes), with the largest N and D of the transaction's durable commands.
// EXEC's reply is held back until the WAIT's, and each durable element is
// then answered as its plain form is (durable.go, durable_script.go): with
// its rule's N acknowledged, as Valkey answered; with fewer, an acquisition
// is undone (token-checked) and answered "not taken" (nil, :0; NOTDURABLE
// for SET NX GET), a renewal or fenced write answers NOTDURABLE, and a
// client's script NOTDURABLE, the grants it minted undone: the MGET of
// their counters is queued just before it (its QUEUED and its element of
// EXEC's reply are not the client's). Other elements are left as they are.
// A transaction that did not run (EXECABORT, nil after a WATCH) undoes
// nothing and its reply passes as it is; its WAIT still went (it was sent
// before EXEC's reply came) and waits for the connection's earlier writes.

// txnDurable is a transaction's durability, as its queued commands ask.
type txnDurable struct {
	wait policy.DurabilityConfig // the largest N and D queued
	// acked is the WAIT's answer (-1: not a count), set by its reader
	// before the elements are shaped, on that reader.
	acked int64
	// hidden: the commands lockproxy queued (the counters' MGETs), not
	// counted in CLIENT LIST's multi=.
	hidden int
}

// durableTxn returns the session's transaction's durability, raised to d.
func (s *session) durableTxn(d *policy.DurabilityConfig) *txnDurable {
	if s.multiDur == nil {
		s.multiDur = &txnDurable{}
	}
	w := &s.multiDur.wait
	w.Replicas = max(w.Replicas, d.Replicas)
	w.Timeout = max(w.Timeout, d.Timeout)
	return s.multiDur
}

// queueRun queues a plan's script in a transaction; hook shapes its
// element of EXEC's reply and records its effects (run's).
func (s *session) queueRun(plan rewrite.Plan, hook func([]byte) []byte) {
	raw := encodeScript(plan, false)
	if plan.Durable != nil && !plan.Script.RO {
		s.queueDurableScript(plan, raw, hook)
		return
	}
	d := durability(plan)
	if d == nil {
		s.queueInMulti(raw, nil, hook)
		return
	}
	tx := s.durableTxn(d)
	if plan.Script != rewrite.Acquire {
		// A renewal or a fenced write: NOTDURABLE when short.
		key := ""
		if len(plan.Effects) > 0 {
			key = string(plan.Effects[0].Key)
		}
		s.queueInMulti(raw, nil, func(el []byte) []byte {
			out := hook(el)
			if len(out) > 0 && out[0] == '-' || tx.acked >= int64(d.Replicas) {
				return out
			}
			s.p.durable.short.Add(1)
			return resp.AppendError(nil, errNotDurableWrite(key, d))
		})
		return
	}
	a, sc := s.durableAcquisition(plan, d), plan.Script
	s.queueInMulti(raw, nil, func(el []byte) []byte {
		// After a SELECT the transaction ran: the database it switched to.
		a.db = s.execDBOr(a.db)
		return a.answer(rewrite.Fold(a.shape, a.effects, sc.Unwrap(el), a.proto), tx.acked)
	})
}

// queueDurableScript queues a client's script under a durable rule, behind
// the read of its durable locks' counters.
func (s *session) queueDurableScript(plan rewrite.Plan, raw []byte, hook func([]byte) []byte) {
	d := plan.Durable
	tx := s.durableTxn(d)
	locks := s.durableLocks(plan)
	db := s.db
	var before []int64 // nil: not read; set and read by EXEC's reader
	if len(locks) > 0 {
		n := len(locks) / 4
		muted := s.mute
		s.mute = true
		s.queueInMulti(countersRead(locks), nil, func(el []byte) []byte {
			before = counters(el, n)
			return nil // not the client's
		})
		s.mute = muted
		tx.hidden++
	}
	key := ""
	if len(locks) > 0 {
		key = string(locks[0])
	} else if len(plan.Keys) > 0 {
		key = string(plan.Keys[0])
	}
	s.queueInMulti(raw, nil, func(el []byte) []byte {
		out := hook(el)
		if tx.acked >= int64(d.Replicas) {
			return out
		}
		s.p.durable.short.Add(1)
		s.p.undoScriptGrantsLater(locks, before, s.execDBOr(db))
		return resp.AppendError(nil, errNotDurableScript(key, d))
	})
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
// the client from both: shape (execHook) folds EXEC's reply once the
// WAIT's answer is in tx.
func (s *session) execDurable(raw []byte, shape func([]byte) []byte, tx *txnDurable) {
	var mu sync.Mutex
	var reply []byte
	muted := s.mute
	s.mute = true
	s.forward(raw, func(r []byte) []byte {
		c := bytes.Clone(r) // kept past this read (runDurableWrite)
		mu.Lock()
		reply = c
		mu.Unlock()
		return r
	})
	s.mute = muted
	d := tx.wait
	s.forward(waitCommand(&d), func(w []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if reply == nil {
			// Both replies come on one connection, EXEC's first: not
			// seen, so nothing to answer from.
			return resp.AppendError(nil, errNotDurableTxn(&d))
		}
		tx.acked = -1
		if n, ok := resp.ReplyInt(w); ok {
			tx.acked = n
		}
		return shape(reply)
	})
}
