package proxy

import (
	"io"
	"net"

	"github.com/lockproxy/lockproxy/replies"
	"github.com/lockproxy/lockproxy/upstream"
)

// deliverN hands the client n consecutive replies in b, numbered seq on
// (b is empty for replies the client asked not to get): at once when their
// turn has come, followed by the held replies whose turn comes with them;
// held until then otherwise. It is called by upstream readers, and by the
// session for replies the proxy made.
func (s *session) deliverN(seq uint64, b []byte, n int) {
	s.answered(s.deliverCork(seq, b, n, false))
}

// deliverCork is deliverN without the counting: it returns how many replies
// reached the output, for answered. With cork, the bytes are queued but not
// written: an upstream reader handing out a batch of replies for many
// clients calls uncorkOut, then answered, for each once the batch is out, so
// a client whose replies come in between other clients' (in front of a
// cluster, where its pipeline's replies come from several nodes) gets one
// write per batch, not one per reply. Counted only once written: a session
// that ends once its replies are in must not close its output before them.
func (s *session) deliverCork(seq uint64, b []byte, n int, cork bool) int {
	done := n // replies that reached the output (or were dropped with it)
	s.outMu.Lock()
	var a outAction
	switch {
	case s.outClosed:
	case seq != s.outSeq:
		if s.overLocked(len(b)) {
			s.closeOutLocked()
			a = outOver
			break
		}
		s.held.Add(seq, b, n)
		done = 0
	default:
		s.outSeq += uint64(n)
		h, ok := s.held.Next(s.outSeq)
		if !ok {
			a = s.writeCork(b, cork)
			s.observeReplies(b, n, upstream.MonoNow())
			break
		}
		// The held replies whose turn came with these go out with them
		// in one write (one system call, not one per reply).
		buf := append(s.gather[:0], b...)
		now := upstream.MonoNow()
		s.observeReplies(b, n, now)
		for ok {
			s.observeReplies(h.B, h.N, now)
			s.outSeq += uint64(h.N)
			done += h.N
			buf = append(buf, h.B...)
			h, ok = s.held.Next(s.outSeq)
		}
		a = s.writeCork(buf, cork)
		s.gather = buf[:0]
		if cap(buf) > 1<<20 {
			s.gather = nil
		}
	}
	if s.outClosed {
		done += s.held.Drop()
	}
	s.outMu.Unlock()
	s.afterWrite(a)
	return done
}

// answered counts n replies owed as given: a session waiting for its
// replies to catch up (waitDrain, or paused on its loop) goes on once
// enough are.
func (s *session) answered(n int) {
	if n := s.inflight.Add(-int64(n)); n <= s.waitLE.Load() {
		select {
		case s.drained <- struct{}{}:
		default:
		}
		if s.paused.CompareAndSwap(true, false) {
			s.home.Resume(&s.src)
		}
	}
}

// push is called by an upstream reader with a frame that answers no command
// (a RESP3 push, or anything on a connection in stream mode).
func (s *session) push(b []byte) {
	if s.shards.Load() != nil && s.shardUnsubscribed(b) {
		return // the slot moved: followed, not passed on
	}
	if s.monitorOn.Load() && s.p.own.Drop(b) {
		return // the proxy's own connection set-up (clients.OwnLines)
	}
	s.write(s.p.vids.Push(b)) // a broken redirect named by the proxy's id
}

// PushAfter is push for a frame that came on c after the replies c handed
// the session before it: in front of a cluster, the last of them may still
// be held for its turn (another node's reply is due first), and the push
// then waits with it. An invalidation must not reach the client before the
// value it invalidates, or the client would cache that value for good.
func (s *session) PushAfter(c *upstream.Conn, b []byte) {
	if s.shards.Load() != nil && s.shardUnsubscribed(b) {
		return
	}
	b = s.p.vids.Push(b)
	last, ok := c.LastDelivered()
	if !ok {
		s.write(b)
		return
	}
	s.outMu.Lock()
	if s.outClosed || s.outSeq > last || !s.held.AppendTo(last, b) {
		s.outMu.Unlock()
		s.write(b) // its reply is out already (or gone with the output)
		return
	}
	var a outAction
	dropped := 0
	if s.overLocked(0) {
		s.closeOutLocked()
		a = outOver
		dropped = s.held.Drop()
	}
	s.outMu.Unlock()
	s.afterWrite(a)
	if dropped > 0 {
		s.answered(dropped)
	}
}

// write appends to the output buffer. A client whose unread output passes the
// limit is disconnected, as Valkey's client-output-buffer-limit does: the
// alternative is the proxy's memory growing without bound, or every other
// client on the same upstream connection waiting for this one. The limit
// counts every byte held for the client: queued, and being written.
func (s *session) write(b []byte) {
	s.outMu.Lock()
	a := s.writeLocked(b)
	dropped := 0
	if s.outClosed {
		dropped = s.held.Drop()
	}
	s.outMu.Unlock()
	s.afterWrite(a)
	if dropped > 0 {
		s.answered(dropped)
	}
}

// outAction is what is left to do, once outMu is released, after bytes were
// added to the output.
type outAction uint8

const (
	outWake  outAction = 1 << iota // the writer goroutine has bytes to write
	outStart                       // start the writer goroutine
	outOver                        // the limit was passed: cut the client off
)

// writeLocked is write's part under outMu.
func (s *session) writeLocked(b []byte) outAction { return s.writeCork(b, false) }

// writeCork is writeLocked; with cork, b is only queued (see deliverCork).
func (s *session) writeCork(b []byte, cork bool) outAction {
	if s.outClosed || len(b) == 0 {
		return 0
	}
	if cork && !s.overLocked(len(b)) {
		s.out.Add(b)
		return 0
	}
	if cork && s.writing == 0 && s.raw != nil {
		// Corking must not cut off a client that reads: what the
		// socket takes now does not count against the limit, as
		// without corking.
		n := s.out.WriteTo(s.dw.Write)
		if c, ok := s.nc.(interface{ CountWrite(int) }); ok && n > 0 {
			c.CountWrite(n)
		}
	}
	if s.out.Len() == 0 && s.writing == 0 && s.raw != nil {
		// Nothing owed before these bytes: hand them to the socket now.
		n := s.dw.Write(b)
		if c, ok := s.nc.(interface{ CountWrite(int) }); ok && n > 0 {
			c.CountWrite(n)
		}
		b = b[n:]
		if len(b) == 0 {
			return 0
		}
	}
	// Checked before appending: the bytes held never pass the limit.
	if s.overLocked(len(b)) {
		s.closeOutLocked()
		return outOver
	}
	s.out.Add(b)
	if !s.writer {
		s.writer = true
		return outStart | outWake
	}
	return outWake
}

// uncorkOut writes what deliverCork queued: straight to the socket when the
// writer goroutine is not writing, the rest (what the socket did not take)
// by the writer goroutine.
func (s *session) uncorkOut() {
	s.outMu.Lock()
	if s.outClosed || s.out.Len() == 0 {
		s.outMu.Unlock()
		return
	}
	if s.writing == 0 && s.raw != nil {
		n := s.out.WriteTo(s.dw.Write)
		if c, ok := s.nc.(interface{ CountWrite(int) }); ok && n > 0 {
			c.CountWrite(n)
		}
	}
	var a outAction
	if s.out.Len() > 0 {
		a = outWake
		if !s.writer {
			s.writer = true
			a |= outStart
		}
	}
	s.outMu.Unlock()
	s.afterWrite(a)
}

// overLocked reports whether m more bytes would pass the output limit,
// which counts every byte held for the client: queued, being written, and
// held for their turn.
func (s *session) overLocked(m int) bool {
	return int64(s.out.Len()+s.writing+s.held.Bytes()+m) > int64(s.p.opts.ClientOutputBufferLimit)
}

// closeOutLocked ends the output and forgets what it queued; the caller
// drops what is held (those replies count as given).
func (s *session) closeOutLocked() {
	s.outClosed = true
	s.out.Drop()
}

// afterWrite does what writeLocked left to do.
func (s *session) afterWrite(a outAction) {
	if a&outStart != 0 {
		go s.writeLoop()
	}
	if a&outOver != 0 {
		s.p.log.Warn("disconnecting a client that does not read its replies",
			"client", s.addr, "limit_bytes", int64(s.p.opts.ClientOutputBufferLimit))
		s.abort()
		return
	}
	if a&outWake != 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *session) writeLoop() {
	defer close(s.writerEnd)
	// writev straight to the socket where there is one (the counting
	// wrapper would turn it into one write per chunk).
	var w io.Writer = s.nc
	count := func(int) {}
	if u, ok := s.nc.(interface {
		Unwrap() net.Conn
		CountWrite(int)
	}); ok {
		w, count = u.Unwrap(), u.CountWrite
	}
	var batch, held [][]byte
	for {
		stop := false
		select {
		case <-s.wake:
		case <-s.stopW:
			stop = true
		}
		s.outMu.Lock()
		s.writing = s.out.Len()
		batch = s.out.Take(batch[:0])
		s.outMu.Unlock()
		if len(batch) > 0 {
			// WriteTo consumes batch; held keeps the chunks for reuse.
			held = append(held[:0], batch...)
			bufs := net.Buffers(batch)
			n, err := bufs.WriteTo(w)
			count(int(n))
			held = replies.Recycle(held)
			if err != nil {
				s.outMu.Lock()
				s.outClosed = true
				s.writing = 0
				s.out.Drop()
				s.outMu.Unlock()
				s.abort()
				return
			}
			s.outMu.Lock()
			s.writing = 0
			more := s.out.Len() > 0
			s.outMu.Unlock()
			if more {
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
		}
		if stop {
			s.outMu.Lock()
			rest := s.out.Len()
			s.outMu.Unlock()
			if rest == 0 {
				return
			}
		}
	}
}

// A session is the upstream.Sink of the commands it sends, and the
// upstream.Owner of its dedicated connection.

func (s *session) Deliver(seq uint64, b []byte, n int) { s.deliverN(seq, b, n) }

func (s *session) DeliverCork(seq uint64, b []byte, n int) int {
	return s.deliverCork(seq, b, n, true)
}

func (s *session) Uncork(done int) {
	s.uncorkOut()
	s.answered(done)
}

func (s *session) Alone() bool      { return s.inflight.Load() == 1 }
func (s *session) Push(b []byte)    { s.push(b) }
func (s *session) InputEnded() bool { return s.inputEnded.Load() }

// poller is the session's event loop as its connections' poller; nil on a
// goroutine of its own.
func (s *session) poller() upstream.Poller {
	if s.lp == nil {
		return nil
	}
	return s.lp
}
