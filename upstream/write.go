package upstream

// Send queues a batch of raw commands with their pending entries. It reports
// false when the connection is already dead (nothing was queued). From an
// event loop (lp set) the bytes only queue: the loop writes every connection
// it queued to once, at the end of its round (uncork), so Valkey gets one
// batch of all the clients that were ready together.
func (c *Conn) Send(b []byte, ps []Pend, lp Poller) bool {
	c.mu.Lock()
	if c.dead.Load() {
		c.mu.Unlock()
		return false
	}
	if !c.stream.Load() {
		now := MonoNow() // one clock read for the batch
		for _, p := range ps {
			p.Sent = now
			c.q.push(p)
		}
	}
	if lp != nil && c.raw != nil && !c.stream.Load() {
		c.wbuf = append(c.wbuf, b...)
		c.mu.Unlock()
		lp.Queued(c)
		return true
	}
	if c.raw != nil && !c.stream.Load() {
		switch {
		case len(c.wbuf) == 0 && !c.writing && c.q.n <= len(ps):
			// An idle connection: nothing queued or in flight before these
			// bytes, so write them now, saving a hand-off to the writer.
			n := c.dw.Write(b)
			b = b[n:]
			c.armLocked(false)
			if len(b) == 0 {
				c.mu.Unlock()
				return true
			}
		case c.q.n > len(ps) || c.writing:
			// A busy one: replies are due, and the reader sends what
			// queued up meanwhile as soon as it has handed them out
			// (flushLocked), all clients' commands in one write — the
			// batching a shared connection gains its throughput from —
			// with no wake-up of the writer goroutine. A write in
			// progress picks the bytes up when it ends.
			c.wbuf = append(c.wbuf, b...)
			c.mu.Unlock()
			return true
		}
	}
	c.wbuf = append(c.wbuf, b...)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

// Uncork writes what an event loop queued on c during its round.
func (c *Conn) Uncork() {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
}

func (c *Conn) writeLoop() {
	defer c.h.WG.Done()
	var buf []byte
	for {
		select {
		case <-c.wake:
		case <-c.quit:
			return
		}
		c.mu.Lock()
		buf, c.wbuf = c.wbuf, buf[:0]
		c.writing = len(buf) > 0
		end := len(buf) == 0 && c.endWrite
		c.mu.Unlock()
		if end {
			c.shutWrite()
		}
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				c.Fail(err)
				return
			}
			c.mu.Lock()
			c.writing = false
			more := len(c.wbuf) > 0 || c.endWrite
			c.armLocked(false)
			c.mu.Unlock()
			if more {
				select {
				case c.wake <- struct{}{}:
				default:
				}
			}
		}
		// Do not keep a huge buffer alive after one large command.
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// flushLocked sends what sessions queued while the connection was busy. The
// reader calls it after taking replies, so commands queued behind in-flight
// ones go out as soon as those are answered. What the socket does not take
// at once is left to the writer goroutine.
func (c *Conn) flushLocked() {
	if len(c.wbuf) == 0 || c.writing || c.raw == nil {
		return
	}
	n := c.dw.Write(c.wbuf)
	c.wbuf = c.wbuf[:copy(c.wbuf, c.wbuf[n:])]
	c.armLocked(false)
	if len(c.wbuf) > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}
