package proxy

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// The session's side of an event loop (package evloop; loopclient.go is
// how the loop sees a session): handling what arrived without ever waiting
// for more, pausing while replies catch up, and leaving the loop, to end or
// to go on on a goroutine of its own.
//
// Only sessions on shared upstream connections live in a loop. Handling a
// command returns a step (step.go) that the loop's session carries out
// (carry): a command that needs a dedicated connection (MULTI, BLPOP,
// SUBSCRIBE...) moves its session onto a goroutine of its own before
// anything is done for it (stepOwnConn), because the dial and the waits
// that follow would stall every other client of the loop. Commands that
// must follow every earlier reply (settle, switchFirst) wait, kept by the
// session, until the loop has read those replies (stepSettle): waiting for
// them here would wait for the loop itself. What else could block — a dial
// of a shared connection, fetching Valkey's command table or a movable
// command's keys for the lock rules (the side connection) — is done off
// the loop while the client waits alone (stepOffLoop): one client's dial to
// a slow or unreachable Valkey holds no other client up.

// pump handles every complete command the session has received, reading its
// socket at most once (only when the loop saw it readable), and never
// waiting for more.
func (s *session) pump() {
	s.lastActive.Store(time.Now().UnixNano())
	s.readAt = upstream.MonoNow() // every command this round was read now
	defer func() {
		if r := recover(); r != nil {
			s.p.log.Error("closing a client after an internal error", "client", s.addr,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if s.lp != nil {
				s.end(false)
			}
		}
	}()
	for !s.paused.Load() {
		cmd, st := s.read()
		if st.do == stepNext {
			st = s.handle(cmd)
		}
		if !s.carry(cmd, st) {
			return
		}
	}
	s.flush()
}

// carry carries out on the event loop the step handling cmd asked for (or
// reading, when there was no command to handle). It reports whether the
// loop reads on.
func (s *session) carry(cmd resp.Command, st step) bool {
	switch st.do {
	case stepNext:
		return true
	case stepEnd:
		s.end(st.graceful)
	case stepIdle:
		if s.p.shuttingDown.Load() {
			s.end(true)
			return false
		}
		s.flush()
		s.unclaim()
	case stepSettle:
		s.putBack(cmd)
		s.flush()
		return !s.pause(0) // not paused: the replies came meanwhile
	case stepOffLoop:
		s.putBack(cmd)
		s.flush()
		s.park(st.job)
	case stepAside:
		s.flush()
		seq := s.owe()
		s.park(func() {
			r := st.answer()
			if st.mute {
				r = nil
			}
			s.deliverN(seq, r, 1)
		})
	case stepOwnConn:
		s.putBack(cmd)
		s.migrate()
	}
	return false
}

// pause stops the loop reading s until at most le of its replies are owed.
// It reports false when that is so already (nothing paused).
func (s *session) pause(le int64) bool {
	s.waitLE.Store(le)
	s.paused.Store(true)
	if s.inflight.Load() <= le && s.paused.CompareAndSwap(true, false) {
		s.waitLE.Store(-1)
		return false
	}
	s.lp.Reading(&s.src, false)
	return true
}

// waitJob in waitLE marks a session paused for a job off the loop; no
// number of replies ends that wait.
const waitJob = -2

// park stops the loop reading s while job, which may block (a dial, a round
// trip on the side connection), runs on a goroutine; then the loop reads s
// again. The loop's other clients go on meanwhile, and this one waits as it
// would on a goroutine of its own.
func (s *session) park(job func()) {
	s.waitLE.Store(waitJob)
	s.paused.Store(true)
	s.lp.Reading(&s.src, false)
	home := s.home
	go func() {
		job()
		if s.paused.CompareAndSwap(true, false) {
			home.Resume(&s.src)
		}
	}()
}

// connFirst is asked, on an event loop, before anything is done for a
// command the session sends on its shared connection of the pool key (the
// pool it switches to, for SELECT and HELLO), and reports whether it asked
// for a step instead: stepSettle behind a command Valkey may hold back
// (heldFirst), or the dial of the session's slot of the pool off the loop
// (dialStep) when it has none; the command is handled again after. On a
// goroutine of its own the session waits and dials where it needs the
// connection (target).
func (s *session) connFirst(key poolKey) bool {
	if s.lp == nil || s.ded != nil {
		return false
	}
	if s.heldFirst() {
		return true
	}
	if !s.needsDial(key) {
		return false
	}
	s.asked = s.dialStep(key)
	return true
}

// forwardReady forwards raw, as it is, on the session's shared connection,
// once it is dialled (connFirst): on an event loop the command may be
// handled again first.
func (s *session) forwardReady(raw []byte) {
	if !s.connFirst(s.key()) {
		s.forward(raw, nil)
	}
}

// needsDial reports whether the session's slot of the pool key has no live
// connection, and no recent dial failure to answer at once: its dial (up to
// dial_timeout) must then run off the loop, and a command that needs it is
// handled once it is done (dialStep).
func (s *session) needsDial(key poolKey) bool {
	if c := s.shared; c != nil && s.sharedKey == key && !c.Dead() {
		return false
	}
	if d := s.learned.dialed; d != nil && d.key == key {
		return false // dialled for this very command
	}
	return !s.p.pool(key).Ready(int(s.id))
}

// dialStep is the step that dials the session's slot of the pool key off
// the loop, keeping the outcome for the command handled again (poolConn).
func (s *session) dialStep(key poolKey) step {
	return step{do: stepOffLoop, job: func() {
		_, err := s.p.pool(key).Conn(int(s.id))
		s.learned.dialed = &dialResult{key: key, err: err}
	}}
}

// end leaves the loop and finishes the session on a goroutine: waiting for
// the replies it is owed must not stall the loop.
func (s *session) end(graceful bool) {
	s.flush()
	s.leaveLoop()
	go s.finish(graceful)
}

// migrate moves the session onto a goroutine of its own, for good; a
// command put back is read again there.
func (s *session) migrate() {
	s.flush()
	s.leaveLoop()
	s.paused.Store(false)
	s.waitLE.Store(-1)
	go s.serveGo()
}
