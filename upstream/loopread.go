package upstream

import (
	"errors"
	"time"
)

// A shared connection an event loop reads instead of a goroutine of its
// own: its replies are handed out in the same rounds that read the
// clients, with no goroutine hand-off between the two.

// ErrWouldBlock is what a non-blocking read answers when there is nothing
// more to read now.
var ErrWouldBlock = errors.New("no more input now")

// Loopable reports whether an event loop may read c: a shared connection
// whose socket it can read directly.
func (c *Conn) Loopable() bool { return c.raw != nil && c.owner == nil && c.relay == nil }

// Attach makes lp the reader of c, before Start and before lp can see c:
// read reads a non-blocking descriptor once (ErrWouldBlock when there is
// nothing). It returns c's descriptor; false when c has none (TLS), and
// then c keeps a reader goroutine. CancelAttach undoes it if lp cannot
// take c.
func (c *Conn) Attach(lp Poller, read func(fd int, b []byte) (int, error)) (int, bool) {
	fd := -1
	if c.raw == nil {
		return -1, false
	}
	if err := c.raw.Control(func(f uintptr) { fd = int(f) }); err != nil || fd < 0 {
		return -1, false
	}
	c.fd, c.lp = fd, lp
	// ReadReady's read, bound once: a closure made per read is allocated
	// per read.
	c.loopRead = func(b []byte) (int, error) {
		if !c.loopArmed {
			return 0, ErrWouldBlock
		}
		c.loopArmed = false
		return read(c.fd, b)
	}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	return fd, true
}

// CancelAttach undoes Attach, before Start, when the loop could not take c.
func (c *Conn) CancelAttach() { c.lp, c.timer = nil, nil }

// Looped reports whether an event loop reads c (Attach).
func (c *Conn) Looped() bool { return c.lp != nil }

// FD is the descriptor of a connection an event loop reads (Attach).
func (c *Conn) FD() int { return c.fd }

// ReadReady reads a loop-read connection once, as the loop saw it ready,
// and hands out its replies. Only the loop calls it.
func (c *Conn) ReadReady() {
	c.loopArmed = true
	c.readOnce(c.loopRead)
}

// CloseSocket closes the socket of a connection the loop detached
// (Poller.Detach), once the loop no longer reads it.
func (c *Conn) CloseSocket() { c.nc.Close() }
