package proxy

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// The session's side of an event loop (eventloop_linux.go): handling what
// arrived without ever waiting for more, pausing while replies catch up,
// and leaving the loop, to end or to go on on a goroutine of its own.

// pump handles every complete command the session has received, reading its
// socket at most once (only when the loop saw it readable), and never
// waiting for more.
func (s *session) pump() {
	s.lastActive.Store(time.Now().UnixNano())
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
				s.unclaim()
				return
			case errors.As(err, &pe):
				// Valkey answers a protocol error and closes; so do we,
				// after every reply still owed.
				s.local(resp.AppendError(nil, errProtocol(pe.Error())))
				s.end(true)
				return
			case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				s.inputEnded.Store(true)
				s.end(true)
				return
			}
			s.end(false)
			return
		}
		k := s.p.cmds().kind(cmd.Args[0])
		if s.needsOwnConn(k, cmd.Args) {
			s.rd.Unread()
			s.migrate()
			return
		}
		if (settles(k) || s.behindHeld()) && s.inflight.Load()+int64(len(s.bpend)) > 0 {
			// Handled once every earlier reply is in: the loop reads
			// the replies, so it must not wait for them here.
			s.rd.Unread()
			s.flush()
			if s.pause(0) {
				return
			}
			continue
		}
		if s.needsSpares(k, cmd.Args) {
			// The spare connections a command Valkey may hold back
			// needs beside it (busyscript.go), opened off the loop
			// like any dial.
			pl := s.p.pool(s.key())
			s.offLoop(pl.openSpares)
			return
		}
		if key, dials := s.willDial(k, cmd.Args); dials {
			// Dialling could take up to dial_timeout (Valkey slow or
			// unreachable): the loop's other clients must not wait.
			s.offLoop(func() {
				_, err := s.p.pool(key).conn(int(s.id))
				s.dialed = &dialResult{key: key, err: err}
			})
			return
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
// SELECT, HELLO, AUTH and RESET move the session to another pool, which
// must not overtake the replies still due on the old one.
func settles(k kind) bool {
	switch k {
	case kAdmin, kInfo, kSelect, kHello, kAuth, kReset:
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

// waitJob in waitLE marks a session paused for an offLoop job; no number
// of replies ends that wait.
const waitJob = -2

// offLoop puts back the command being handled and stops reading s while
// job, which may block (a dial, a round trip on the side connection), runs
// on a goroutine; then the loop reads s again and handles the command anew,
// now without waiting. The loop's other clients go on meanwhile, and this
// one waits as it would on a goroutine of its own. What job learns must be
// kept where the second handling finds it (a pool slot, the command table,
// s.movable).
func (s *session) offLoop(job func()) {
	s.rd.Unread()
	s.putBack = true
	s.flush()
	s.waitLE.Store(waitJob)
	s.paused.Store(true)
	s.lp.reading(s, false)
	home := s.home
	go func() {
		job()
		if s.paused.CompareAndSwap(true, false) {
			home.resume(s)
		}
	}()
}

// willDial reports whether handling a command of kind k would dial a shared
// connection (and for which pool): the session's slot has none, or one that
// died, and no recent dial failure to answer at once. SELECT and HELLO
// switch pools, so they are asked about the pool they switch to.
func (s *session) willDial(k kind, args [][]byte) (poolKey, bool) {
	if s.ded != nil || !s.authed {
		return poolKey{}, false
	}
	switch k {
	case kAdmin, kQuit, kReset, kAuth:
		return s.key(), false // answered by the proxy (an AUTH's check dials its own: logins.go)
	case kHello:
		if i := helloAuthAt(args); i > 0 && !s.matchesProxyCreds(args[i+1], args[i+2]) {
			return s.key(), false // the login's check dials its pool (logins.go)
		}
	}
	key := s.poolAfter(k, args)
	if c := s.shared; c != nil && s.sharedKey == key && !c.dead.Load() {
		return key, false
	}
	if d := s.dialed; d != nil && d.key == key {
		return key, false // dialled for this very command
	}
	return key, !s.p.pool(key).ready(int(s.id))
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
