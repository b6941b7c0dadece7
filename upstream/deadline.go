package upstream

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// armLocked keeps the reply deadline: while commands wait, the next reply
// must come within ReplyTimeout of the moment the oldest of them was written
// (or of the last reply, which proves the server is alive). New writes do not
// postpone it, so steady traffic to a paused server still times out. A
// blocking command adds the time it asked to wait; one that asked to wait
// forever, or a stream, disarms it.
//
// Called with c.mu held: by writers after a write (progress false) and by the
// reader after taking replies (progress true).
func (c *Conn) armLocked(progress bool) {
	if c.stream.Load() || c.q.n == 0 {
		if c.armed {
			c.setDeadlineLocked(time.Time{})
			c.armed = false
		}
		if c.q.n == 0 {
			c.blockWait.Store(0)
		}
		return
	}
	if c.armed && !progress {
		return
	}
	wait := c.blockWait.Load()
	if wait < 0 {
		c.setDeadlineLocked(time.Time{})
		c.armed = false
		return
	}
	c.setDeadlineLocked(time.Now().Add(c.h.ReplyTimeout + time.Duration(wait)))
	c.armed = true
}

// setDeadlineLocked sets (or, with the zero time, clears) the time by which
// the next reply must arrive. A connection an event loop reads has no
// blocking read to time out: a timer fails it instead.
func (c *Conn) setDeadlineLocked(t time.Time) {
	if c.lp == nil {
		_ = c.nc.SetReadDeadline(t)
		return
	}
	c.deadline = t
	if t.IsZero() {
		c.timer.Stop()
		return
	}
	c.timer.Reset(time.Until(t))
}

// expire runs when a loop-read connection's reply timer fires: the
// connection fails if the deadline it was set for still stands.
func (c *Conn) expire() {
	c.mu.Lock()
	late := c.armed && !c.deadline.IsZero() && !time.Now().Before(c.deadline)
	c.mu.Unlock()
	if late {
		c.Fail(replyTimeout(c.h.ReplyTimeout))
	}
}

// replyTimeout is the error of a connection whose reply did not come in
// time; a net.Error whose Timeout is true, as a socket deadline's is.
type replyTimeout time.Duration

func (e replyTimeout) Error() string {
	return fmt.Sprintf("no reply within reply_timeout %s", time.Duration(e))
}
func (replyTimeout) Timeout() bool   { return true }
func (replyTimeout) Temporary() bool { return true }

// ExpectBlock records that a command about to be sent may block for wait
// (negative: forever), so the reply deadline allows for it.
func (c *Conn) ExpectBlock(wait time.Duration) {
	for {
		old := c.blockWait.Load()
		if old < 0 || (wait >= 0 && int64(wait) <= old) {
			return
		}
		if c.blockWait.CompareAndSwap(old, int64(wait)) {
			return
		}
	}
}

func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
