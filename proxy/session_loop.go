package proxy

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/lockproxy/lockproxy/resp"
)

// The session's side of an event loop (eventloop_linux.go): handling what
// arrived without ever waiting for more, pausing while replies catch up,
// and leaving the loop, to end or to go on on a goroutine of its own.

// pump handles every complete command the session has received, reading its
// socket at most once (only when the loop saw it readable), and never
// waiting for more.
func (s *session) pump() {
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
		cmd, err := s.rd.ReadCommand()
		if err != nil {
			var pe *resp.ProtocolError
			switch {
			case err == errWouldBlock:
				if s.p.shuttingDown.Load() {
					s.end(true)
					return
				}
				s.flush()
				return
			case errors.As(err, &pe):
				// Valkey answers a protocol error and closes; so do we,
				// after every reply still owed.
				s.local(resp.AppendError(nil, errProtocol(pe.Error())))
				s.end(true)
				return
			}
			s.end(false)
			return
		}
		k := lookup(kinds, cmd.Args[0])
		if s.needsOwnConn(k, cmd.Args) {
			s.rd.Unread()
			s.migrate()
			return
		}
		if settles(k) && s.inflight.Load()+int64(len(s.bpend)) > 0 {
			// Handled once every earlier reply is in: the loop reads
			// the replies, so it must not wait for them here.
			s.rd.Unread()
			s.flush()
			if s.pause(0) {
				return
			}
			continue
		}
		if !s.handleKind(cmd, k) {
			s.end(true)
			return
		}
		if s.ded != nil {
			s.migrate() // a path needsOwnConn did not foresee
			return
		}
	}
	s.flush()
}

// settles tells the commands that are handled only after every reply owed
// before them: admin commands and INFO answer about what came before, and
// SELECT, HELLO and RESET move the session to another pool, which must not
// overtake the replies still due on the old one.
func settles(k kind) bool {
	switch k {
	case kAdmin, kInfo, kSelect, kHello, kReset:
		return true
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
	s.lp.reading(s, false)
	return true
}

// end leaves the loop and finishes the session on a goroutine: waiting for
// the replies it is owed must not stall the loop.
func (s *session) end(graceful bool) {
	s.flush()
	s.lp.remove(s)
	go s.finish(graceful)
}

// migrate moves the session onto a goroutine of its own, for good; the
// command it stopped at is read again there.
func (s *session) migrate() {
	s.flush()
	s.lp.remove(s)
	s.paused.Store(false)
	s.waitLE.Store(-1)
	go s.serveGo()
}

var errWouldBlock = errors.New("no more input now")
