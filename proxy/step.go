package proxy

import (
	"errors"
	"io"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// A step is what handling a command (handle) asks of the engine that serves
// the session: an event loop (session_loop.go) or the session's own
// goroutine (serveGo). Handling decides; the engine carries the step out.
// Every step but stepNext, stepEnd and stepIdle is asked only of an event
// loop (each place that asks one checks s.lp first): on a goroutine of its
// own the session simply waits where it must. carryHere still carries
// those steps out on a session's own goroutine, waiting in place, so that
// a place that asked one without the check would cost its client a wait,
// not its command.
type step struct {
	do stepKind
	// graceful, for stepEnd: the replies owed are delivered first.
	graceful bool
	// job, for stepOffLoop: what must wait for Valkey, run off the loop.
	job func()
	// answer, for stepAside: the reply to the command, made off the
	// loop; mute: the client does not get it (CLIENT REPLY).
	answer func() []byte
	mute   bool
}

type stepKind uint8

const (
	// stepNext: the command was handled; read the next one.
	stepNext stepKind = iota
	// stepEnd: the session ends (QUIT, end of input, a protocol error).
	stepEnd
	// stepIdle: no complete command has arrived; wait for the client.
	stepIdle
	// stepSettle: handle the command again once every reply owed before
	// it is in (it answers about them, moves the session to another
	// connection, which must not overtake them, or comes after one of its
	// commands Valkey may hold back: heldFirst).
	stepSettle
	// stepOffLoop: run job on a goroutine while only this client waits,
	// then handle the command again (a dial, a round trip on the side
	// connection: what job learned is where the second handling finds
	// it).
	stepOffLoop
	// stepAside: answer the command with what answer makes, on a
	// goroutine, in the command's place among the session's replies.
	stepAside
	// stepOwnConn: handle the command on a goroutine of the session's
	// own: it needs a connection of its own, whose dial and waits would
	// stall the loop's other clients.
	stepOwnConn
)

func ended(graceful bool) step { return step{do: stepEnd, graceful: graceful} }

// read returns the session's next command: the one a step put back (again)
// first, then what the client sent. When there is none to handle it
// returns the step that follows instead (stepIdle, stepEnd), having
// answered a protocol error as Valkey does.
func (s *session) read() (resp.Command, step) {
	if cmd := s.again; cmd != nil {
		s.again = nil
		s.resumed = true // its handling began when it was first read
		return *cmd, step{}
	}
	cmd, err := s.rd.ReadCommand()
	if err == nil {
		return cmd, step{}
	}
	var pe *resp.ProtocolError
	switch {
	case err == upstream.ErrWouldBlock:
		return cmd, step{do: stepIdle}
	case errors.As(err, &pe):
		// Valkey answers a protocol error and closes; so do we, after
		// every reply still owed.
		s.protocolMark()
		s.local(resp.AppendError(nil, errProtocol(pe.Error())))
		return cmd, ended(true)
	case s.p.shuttingDown.Load() || s.lost.Load():
		return cmd, ended(true)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		s.inputEnded.Store(true)
		return cmd, ended(true)
	}
	return cmd, ended(false)
}

// learned is what the jobs run off an event loop (stepOffLoop) learned for
// the command they ran for, kept where its next handling finds it: each is
// taken by the code that asked for it.
type learned struct {
	// dialed is what a dial of a pool's connection gave (poolConn;
	// logIn's check dials the login's pool too).
	dialed *dialResult
	// movable is what COMMAND GETKEYSANDFLAGS said about the command
	// (lockplan.go).
	movable *movableKeys
	// shot is what a one-off connection answered to it (busy.go).
	shot *oneShot
	// flushTop is what the raise before a flush in a transaction found
	// (cluster_epoch.go).
	flushTop *flushTop
	// login is Valkey's verdict on the credentials of an AUTH or HELLO
	// (logins.go).
	login *loginCheck
	// mapRead: the slot map was read for it (cluster_route.go).
	mapRead bool
}

// putBack keeps a copy of cmd to be read again (read) once the step that
// put it back is carried out: the reader's buffer moves on under it.
func (s *session) putBack(cmd resp.Command) {
	c := cmd.Clone()
	s.again = &c
}

// offLoop asks, as the step of the command being handled (handle returns
// it), for job (which may block: a dial, a round trip on the side
// connection) to run off the loop before the command is handled again.
func (s *session) offLoop(job func()) {
	s.asked = step{do: stepOffLoop, job: job}
}
