package proxy

import "github.com/lockproxy/lockproxy/resp"

// Scripts on a shared connection. While a client's script or function runs,
// Valkey reads no more from that client's connection; after
// busy-reply-threshold it reads every other connection again and answers
// BUSY to each command (but the few busy.go sends on a connection of its
// own). A shared upstream connection is many clients at once: what other
// sessions queue behind a running script would wait for its end, where
// Valkey answers them BUSY (and a session meant to send FUNCTION KILL after
// that BUSY never would).
//
// So a session does not queue a command behind a client's script call that
// is still unanswered on its slot's connection, unless it is owed replies
// there itself (as on its own connection on Valkey, its commands wait for
// its earlier ones): it uses the pool's spare connection meanwhile. Valkey
// treats the spare as any other client's connection, so the session gets
// what Valkey gives a client at that moment: the command waits while the
// script is under busy-reply-threshold, BUSY once it is over (Valkey reads
// its own threshold, CONFIG SET included), the command's own reply once the
// script has ended. The session stays on the spare while replies are owed
// there, and returns to its slot's connection when none are, so its
// commands stay in order; in the meantime the script's own connection
// serves its queue in order again as soon as the script ends or is killed.
//
// The spare is opened when a script call is first sent through the pool
// (not while Valkey is busy, when it could not log in to another
// database), and only script calls count: lockproxy's own lock scripts are
// short, and the clients' commands they come from are not script calls.
// In front of a cluster every node is a pool of its own, and this does not
// apply (a session there follows its keys to their node).

// isScriptCall reports whether a command name is EVAL, EVALSHA, EVAL_RO,
// EVALSHA_RO, FCALL or FCALL_RO.
func isScriptCall(name []byte) bool {
	if len(name) < 4 || len(name) > 10 {
		return false
	}
	switch name[0] | 0x20 {
	case 'e':
		return resp.EqualFold(name, "eval") || resp.EqualFold(name, "evalsha") ||
			resp.EqualFold(name, "eval_ro") || resp.EqualFold(name, "evalsha_ro")
	case 'f':
		return resp.EqualFold(name, "fcall") || resp.EqualFold(name, "fcall_ro")
	}
	return false
}

// besideScript is the connection the session's next command goes to, given
// home, its slot's connection: home, unless a script call waits for its
// reply there and the session owes nothing there itself; then the pool's
// spare, when it is open and no script call waits on it either.
func (s *session) besideScript(home *upConn) *upConn {
	if s.p.cl != nil {
		return home
	}
	if cur := s.lastConn(); cur != nil && !cur.dead.Load() && (len(s.bpend) > 0 || s.inflight.Load() > 0) &&
		(cur == home || cur.spare != nil && cur.spare == s.p.pool(s.key())) {
		if cur.q.scripts.Load() == 0 || s.lp != nil {
			return cur // replies owed there come first
		}
		// On a goroutine of its own the session waits for them here
		// (an event loop did before handling the command: behindScript).
		s.flush()
		s.waitDrain(0)
	}
	if s.scriptCall && s.lp == nil {
		// Open the spare before the first script call (an event loop
		// does that off the loop first: needsSpare).
		_, _ = s.p.pool(s.key()).spareConn()
	}
	if home.q.scripts.Load() == 0 {
		return home
	}
	if sp := s.p.pool(s.key()).spareReady(); sp != nil && sp.q.scripts.Load() == 0 {
		return sp
	}
	return home
}

// needsSpare reports whether a command is a script call through a pool whose
// spare connection is not open yet: an event loop opens it off the loop
// before handling the command.
func (s *session) needsSpare(k kind, args [][]byte) bool {
	return s.p.cl == nil && s.ded == nil && s.authed && k == kForward && isScriptCall(args[0]) &&
		!s.p.pool(s.key()).spareDialled()
}

// lastConn is the connection the session's last command went to.
func (s *session) lastConn() *upConn {
	if len(s.bpend) > 0 {
		return s.bconn
	}
	return s.last
}

// behindScript reports whether the session's last command went to a shared
// connection where a script call waits for its reply: an event loop handles
// the next command only once the session's replies are in, so that
// besideScript may send it elsewhere without overtaking them.
func (s *session) behindScript() bool {
	c := s.lastConn()
	return c != nil && c.owner == nil && c.q.scripts.Load() > 0 && s.p.cl == nil
}
