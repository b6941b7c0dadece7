package proxy

import "github.com/lockproxy/lockproxy/evloop"

// A session as its event loop sees it (evloop.Client). The loop owns the
// socket's readiness, the rounds and the idle sweep; what the session does
// when pumped is session_loop.go's.

// joinLoop hands s to the event loop lp. It reports false when lp cannot
// serve s (no plain socket: TLS); s then runs on a goroutine of its own.
func (s *session) joinLoop(lp *evloop.Loop) bool {
	if s.raw == nil {
		return false
	}
	// Set before lp can see s: it may pump s at once.
	s.home, s.lp = lp, lp
	s.rd.SetSource(&s.src)
	if !lp.Add(&s.src, s.raw, s) {
		s.home, s.lp = nil, nil
		return false
	}
	if s.p.shuttingDown.Load() {
		// Shutdown began after the client was accepted and may have woken
		// the loop before s was in it: s ends once it has handled what it
		// sent.
		lp.Resume(&s.src)
	}
	return true
}

// leaveLoop takes s out of its loop, which never touches its socket again.
func (s *session) leaveLoop() {
	s.lp.Remove(&s.src)
	s.lp = nil
}

// Pump handles what s received, never waiting (pump).
func (s *session) Pump() { s.pump() }

// Paused reports whether the loop stopped reading s until its replies catch
// up or a job off the loop ends (pause, park).
func (s *session) Paused() bool { return s.paused.Load() }

// ReadingOn: the loop reads s again after a pause. Not waitLE's level: a
// job that ended before the loop went on has the command handled at once,
// and that may have waited (waitDrain) and reset waitLE already.
func (s *session) ReadingOn() { s.waitLE.Store(-1) }

// Idle reports whether s is owed no reply and not paused, for
// client_idle_timeout.
func (s *session) Idle() bool { return s.inflight.Load() == 0 && !s.paused.Load() }

// Drop ends s from its loop: its client hung up while paused, or idled out.
func (s *session) Drop() { s.end(false) }
