package proxy

import (
	"github.com/lockproxy/lockproxy/commands"

	"github.com/lockproxy/lockproxy/upstream"
)

// Commands Valkey holds back. While a client's script or function runs,
// Valkey reads no more from that client's connection; after
// busy-reply-threshold it reads every other connection again and answers
// BUSY to each command (but the few busy.go sends on a connection of its
// own). While a CLIENT PAUSE is in force, Valkey holds back the paused
// commands of a connection, and everything after them on it. A shared
// upstream connection is many clients at once: what other sessions queue
// behind such a command would wait for its end, where Valkey answers them at
// once (BUSY, or the reply of a command the pause does not hold), and a
// session meant to send FUNCTION KILL or CLIENT UNPAUSE after that answer
// never would.
//
// So a session does not queue a command behind one that Valkey may hold
// (upstream.Pend.Holds: a script call, or any command sent while a pause sent through
// this proxy is in force) still unanswered on its slot's connection, unless
// it is owed replies there itself (as on its own connection on Valkey, its
// commands wait for its earlier ones): it uses one of the pool's spare
// connections meanwhile, one where nothing may be held. Valkey treats a
// spare as any other client's connection, so the session gets what Valkey
// gives a client at that moment: the command waits while a script is under
// busy-reply-threshold, BUSY once it is over (Valkey reads its own
// threshold, CONFIG SET included), the command's own reply once the script
// has ended or for a command the pause lets through. The session stays on
// the spare while replies are owed there, and returns to its slot's
// connection when none are, so its commands stay in order; the held
// connection serves its queue in order again as soon as the script ends or
// is killed, or the pause ends. When every spare holds something too, the
// command queues on its slot's connection, as before.
//
// The spares are opened when a script call or a CLIENT PAUSE is first sent
// through the pool (not while Valkey is busy, when it could not log in to
// another database). lockproxy's own lock scripts are short, and the
// clients' commands they come from are not script calls. In front of a
// cluster every node is a pool of its own, and this does not apply (a
// session there follows its keys to their node).

// isScriptCall reports whether a command name is EVAL, EVALSHA, EVAL_RO,
// EVALSHA_RO, FCALL or FCALL_RO.
func isScriptCall(name []byte) bool {
	return commands.FlagsOf(name)&commands.ScriptCall != 0
}

// isPause reports whether a command is CLIENT PAUSE.
func isPause(args [][]byte) bool {
	return commands.SubOf(args) == commands.ClientPause
}

// besideHeld is the connection the session's next command goes to, given
// home, its slot's connection: home, unless Valkey may hold a command back
// there and the session owes nothing there itself; then a free spare, when
// one is open.
func (s *session) besideHeld(home *upstream.Conn) *upstream.Conn {
	if s.p.cl != nil {
		return home
	}
	if cur := s.lastConn(); cur != nil && !cur.Dead() && (len(s.bpend) > 0 || s.inflight.Load() > 0) &&
		(cur == home || cur.SpareOf() != nil && cur.SpareOf() == s.p.pool(s.key())) {
		if !cur.Holds() || s.lp != nil {
			return cur // replies owed there come first
		}
		// On a goroutine of its own the session waits for them here
		// (an event loop asked for them before anything was done for
		// the command: heldFirst).
		s.flush()
		s.waitDrain(0)
	}
	if s.holds {
		pl := s.p.pool(s.key())
		if s.lp == nil {
			// Open the spares before the first command that may be
			// held (an event loop did that off the loop first:
			// sparesFirst).
			pl.OpenSpares()
		}
		// Valkey may read a script call in one batch with other
		// clients' commands before it on a shared connection, and
		// their replies would then wait in its output buffer until the
		// script ends: it goes on a spare with nothing else in flight.
		if sp := pl.FreeSpare(true, s.claim, s.unclaim); sp != nil {
			return sp
		}
	}
	if !home.Holds() {
		return home
	}
	if sp := s.p.pool(s.key()).FreeSpare(false, s.claim, s.unclaim); sp != nil {
		return sp
	}
	return home
}

// sparesFirst, on an event loop, asks for the spare connections of the
// session's pool to be opened off the loop (stepOffLoop) when they are not
// all open, before anything is done for a command Valkey may hold back (a
// script call, CLIENT PAUSE), and the command handled again then; it
// reports whether it asked. On a goroutine of its own the session opens
// them where they are needed (besideHeld, client).
func (s *session) sparesFirst() bool {
	if s.lp == nil || s.p.cl != nil || s.ded != nil {
		return false
	}
	pl := s.p.pool(s.key())
	if pl.SparesOpen() {
		return false
	}
	s.offLoop(pl.OpenSpares)
	return true
}

// lastConn is the connection the session's last command went to.
func (s *session) lastConn() *upstream.Conn {
	if len(s.bpend) > 0 {
		return s.bconn
	}
	return s.last
}

// behindHeld reports whether the session's last command went to a shared
// connection where Valkey may hold a command back.
func (s *session) behindHeld() bool {
	c := s.lastConn()
	return c != nil && !c.Dedicated() && c.Holds() && s.p.cl == nil
}

// heldFirst, on an event loop, asks for stepSettle when the session's last
// command went where Valkey may hold it back (behindHeld) with replies
// still owed, and reports whether it asked. It is asked before anything is
// done for a command sent on a shared connection (connFirst: besideHeld may
// then send it elsewhere without overtaking them), for a busy server
// (busyCommand) or CLIENT's (client): Valkey reads nothing more from a
// client whose script runs. On a goroutine of its own the session waits in
// besideHeld, for a command sent on a shared connection only.
func (s *session) heldFirst() bool {
	if s.lp == nil || !s.behindHeld() || s.inflight.Load()+int64(len(s.bpend)) == 0 {
		return false
	}
	s.asked = step{do: stepSettle}
	return true
}

// claim hands the spare c to the session until its command is queued there
// (flush) or it waits for its client (beforeFill, the end of an event
// loop's batch): two sessions that found c idle at once would otherwise
// both send there, and the second would wait behind the first's script or
// paused write, where Valkey answers it beside them. False when another
// session holds the claim.
func (s *session) claim(c *upstream.Conn) bool {
	if s.claimed == c {
		return true
	}
	if !c.Claim(s) {
		return false
	}
	s.unclaim()
	s.claimed = c
	return true
}

// unclaim gives up the session's claim on a spare, if it has one.
func (s *session) unclaim() {
	if c := s.claimed; c != nil {
		c.Unclaim(s)
		s.claimed = nil
	}
}
