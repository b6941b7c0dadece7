package evloop

import (
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/upstream"
)

// Client is a client connection as a loop sees it. Only the loop's
// goroutine calls its methods, and none of them may wait: for I/O, for
// Valkey, or for another goroutine that waits.
type Client interface {
	// Pump handles what the client sent: whatever its Member reads (the
	// socket, once, when the loop saw it readable) and whatever it kept
	// from before. It is called when the socket is readable and when the
	// client was resumed (Loop.Resume, Loop.Wake). It may turn the
	// client's reading off (Loop.Reading) or take it out of the loop
	// (Loop.Remove).
	Pump()
	// Paused reports whether the client waits (for its replies to catch
	// up, or for a job off the loop): the loop then neither reads it on
	// a resume nor drops it as idle.
	Paused() bool
	// ReadingOn is told that the loop reads the client again: it was
	// resumed, its reading was off, and it is no longer paused.
	ReadingOn()
	// Idle reports whether the client is owed no reply and not paused:
	// the idle sweep may then drop it.
	Idle() bool
	// Drop ends the client from the loop: it hung up while paused, or it
	// sent nothing for Config.Idle while Idle. Drop must take it out of
	// the loop (Loop.Remove).
	Drop()
}

// A Member is a loop's record of one client: the client's descriptor, the
// loop serving it, and what only that loop touches (whether its reading is
// off, when it last sent something). It is the reader of the client's
// socket (Read). The client keeps it, in a field of its own so that adding
// it allocates nothing, and hands it to Loop.Add; the Member's fields are
// the loop's.
type Member struct {
	c        Client
	fd       int
	l        *Loop // the loop serving the client; nil once it left
	armed    bool  // the loop saw the socket readable and it was not read since
	readOff  bool  // the loop turned reading the client off (Loop.Reading)
	lastRead time.Time
	in       *atomic.Int64 // Config.BytesIn
}

// Read reads the client's socket: once per readiness the loop saw, never
// waiting. When there is nothing to read now it returns
// upstream.ErrWouldBlock.
func (m *Member) Read(b []byte) (int, error) {
	if !m.armed || len(b) == 0 {
		return 0, upstream.ErrWouldBlock
	}
	m.armed = false
	n, err := readFd(m.fd, b)
	if n > 0 && m.in != nil {
		m.in.Add(int64(n))
	}
	return n, err
}
