package proxy

import (
	"bytes"
	"sync"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Durable commands queued in a transaction (issue 29): an acquisition,
// a renewal, a fenced write or a client's script under a rule's
// durability, queued between MULTI and EXEC. They run when EXEC does, all
// at once, so one WAIT N D after EXEC (the strictest N of them) vouches for
// all of them. With N acknowledgements the client gets EXEC's reply as
// shaped. With fewer, each durable element gets the answer its command
// gets alone (durable.go, durable_script.go): an acquisition is undone
// and answered as not taken (nil, :0; NOTDURABLE for SET NX GET), a
// renewal or fenced write NOTDURABLE, a script NOTDURABLE with the grants
// it minted undone; the other elements stay as they are. A script's
// counters are read by an MGET lockproxy queues just before it, whose
// element EXEC's reply drops (the client never sees it, nor its QUEUED).
// A transaction that did not run (EXECABORT, a WATCH that aborted it)
// needs nothing.

// txDurable is a transaction's durable commands, and what EXEC needs.
type txDurable struct {
	elems []*durElem
	// hidden: commands lockproxy queued that the client did not send.
	hidden int
	// db: the database the next queued command runs in (a SELECT queued
	// before it switches when EXEC runs it).
	db int
}

// durElem is one durable command of a transaction.
type durElem struct {
	// j: its element in EXEC's reply as the client sees it.
	j    int
	d    *policy.DurabilityConfig
	kind durKind
	key  string // for the error text
	db   int
	// An acquisition's (durAcquire): its plan's keys, shape and effects
	// (the grant, filled in when EXEC's reply is shaped).
	keys    []string
	shape   rewrite.Shape
	effects []rewrite.Effect
	// A script's (durScript): its durable locks (key, counter, records,
	// owner) and their counters read just before it (nil: not read).
	locks  [][]byte
	before []int64
}

type durKind uint8

const (
	durAcquire durKind = iota
	durWrite
	durScript
)

// queueDurable queues a plan's script in the transaction when it runs
// under a rule's durability, and reports whether it did.
func (s *session) queueDurable(plan rewrite.Plan, hook func([]byte) []byte) bool {
	sc := plan.Script
	var e *durElem
	switch {
	case plan.Durable != nil && !sc.RO:
		e = &durElem{d: plan.Durable, kind: durScript, locks: s.durableLocks(plan)}
		if len(e.locks) > 0 {
			e.key = string(e.locks[0])
		} else if len(plan.Keys) > 0 {
			e.key = string(plan.Keys[0])
		}
	case durability(plan) != nil:
		e = &durElem{d: durability(plan), kind: durWrite}
		if len(plan.Effects) > 0 {
			e.key = string(plan.Effects[0].Key)
		}
		if sc == rewrite.Acquire {
			e.kind, e.shape, e.effects = durAcquire, plan.Shape, plan.Effects
			for _, k := range plan.Keys {
				e.keys = append(e.keys, string(k))
			}
			e.key = e.keys[0]
			// Shaped at EXEC, recorded only once the WAIT said whether
			// the grant stands (execDurable).
			proto := s.proto
			hook = func(reply []byte) []byte {
				return bytes.Clone(rewrite.Fold(e.shape, e.effects, sc.Unwrap(reply), proto))
			}
		}
	default:
		return false
	}
	e.db = s.tx.db
	if e.kind == durScript && len(e.locks) > 0 {
		mget := make([][]byte, 0, 1+len(e.locks)/4)
		mget = append(mget, []byte("MGET"))
		for i := 0; i < len(e.locks); i += 4 {
			mget = append(mget, e.locks[i+1])
		}
		n := len(e.locks) / 4
		muted := s.mute
		s.mute = true // its QUEUED is not the client's
		s.queueInMulti(resp.AppendCommand(nil, mget...), nil, func(el []byte) []byte {
			e.before = counters(el, n)
			return nil // dropped from EXEC's reply
		})
		s.mute = muted
		s.tx.hidden++
	}
	e.j = len(s.multiShape) - s.tx.hidden
	s.tx.elems = append(s.tx.elems, e)
	s.queueInMulti(encodeScript(plan, false), nil, hook)
	return true
}

// execDurable sends EXEC, whose reply it holds back, then the WAIT that
// vouches for the transaction's durable commands, and answers the client
// from both (see above).
func (s *session) execDurable(raw []byte, shapers []func([]byte) []byte, tx txDurable) {
	d := tx.elems[0].d // the most replicas any of them asks for
	for _, e := range tx.elems[1:] {
		if e.d.Replicas > d.Replicas {
			d = e.d
		}
	}
	var mu sync.Mutex
	var reply []byte   // EXEC's, as it came (the client's if nothing ran)
	var elems [][]byte // its elements, shaped
	muted := s.mute
	s.mute = true
	s.forward(raw, func(r []byte) []byte {
		el, ok := execSplit(shapers, r)
		mu.Lock()
		defer mu.Unlock()
		reply = bytes.Clone(r)
		if ok {
			elems = el
		}
		return r
	})
	s.mute = muted
	s.forward(waitCommand(d), func(w []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if elems == nil {
			return reply // nothing ran, or a reply lockproxy cannot read: Valkey's
		}
		acked, ok := resp.ReplyInt(w)
		for _, e := range tx.elems {
			if e.j < len(elems) {
				elems[e.j] = s.durableOutcome(e, elems[e.j], ok && acked >= int64(e.d.Replicas), acked)
			}
		}
		return execJoin(elems)
	})
}

// durableOutcome is a durable element's answer once the WAIT is in: its
// own when enough replicas acknowledged it (an acquisition's grant is
// recorded then), else what its command gets alone when they did not.
func (s *session) durableOutcome(e *durElem, el []byte, acked bool, n int64) []byte {
	switch e.kind {
	case durAcquire:
		if acked || e.effects[0].Grant == 0 {
			s.apply(e.effects, el)
			return el
		}
		grant, value, keys, owner, db := e.effects[0].Grant, string(e.effects[0].Value), e.keys, e.effects[0].Owner, e.db
		s.p.durable.undone.Add(1)
		s.p.log.Warn("an acquisition in a transaction was not acknowledged by enough replicas in time: undone, answered as not taken",
			"key", keys[0], "replicas", e.d.Replicas, "acknowledged", n, "timeout", e.d.Timeout.D())
		s.p.wg.Add(1)
		go func() {
			defer s.p.wg.Done()
			s.p.undoGrant(keys, db, owner, grant, value)
		}()
		e.effects[0].Grant = 0
		s.apply(e.effects, nil)
		switch e.shape {
		case rewrite.SetNXReply:
			return resp.AppendInt(nil, 0)
		case rewrite.AcquireGetReply:
			return resp.AppendError(nil, errNotDurable(keys[0], e.d))
		}
		return resp.AppendNull(nil, s.proto)
	case durWrite:
		if acked || len(el) > 0 && el[0] == '-' {
			return el
		}
		s.p.durable.short.Add(1)
		return resp.AppendError(nil, errNotDurableWrite(e.key, e.d))
	}
	if acked {
		return el
	}
	s.p.durable.short.Add(1)
	if len(e.locks) > 0 {
		if e.before == nil {
			s.p.log.Warn("a script in a transaction under durability was not acknowledged by enough replicas in time, and the grants it may have made cannot be told apart (the counters' read failed): not undone", "key", e.key)
		} else {
			locks, before, db := e.locks, e.before, e.db
			s.p.wg.Add(1)
			go func() {
				defer s.p.wg.Done()
				s.p.undoScriptGrants(locks, before, db)
			}()
		}
	}
	return resp.AppendError(nil, errNotDurableScript(e.key, e.d))
}
