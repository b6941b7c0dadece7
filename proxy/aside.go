package proxy

// aside answers the command being handled with the reply job makes, where
// job waits (for other nodes: a command split across slots, a fan-out to
// every primary). The command runs after every earlier command of the
// session has been answered, and before any later one is sent: its parts
// take other connections than the session's, and must neither overtake
// nor be overtaken.
//
// On a goroutine of its own the session simply waits. On an event loop it
// must not: a command with replies still owed settles (it is handled anew
// once they are in; the loop reads them meanwhile); else it asks for
// stepAside: the loop stops reading the client, job runs on a goroutine,
// its reply takes the command's place among the session's replies, and the
// loop reads the client again. job must not touch the read buffer (the
// command's arguments): what it needs is copied before.
func (s *session) aside(job func() []byte) {
	s.flush()
	if s.lp == nil {
		s.waitDrain(0)
		s.local(job())
		return
	}
	if s.inflight.Load() > 0 {
		s.asked = step{do: stepSettle}
		return
	}
	s.asked = step{do: stepAside, answer: job, mute: s.mute}
}

// asideFirst reports whether the command being handled settles first: on
// an event loop, with replies still owed before it, when it is about to
// decide something that should see their effects; the caller then returns.
func (s *session) asideFirst() bool {
	if s.lp == nil {
		return false
	}
	s.flush()
	if s.inflight.Load() == 0 {
		return false
	}
	s.asked = step{do: stepSettle}
	return true
}
