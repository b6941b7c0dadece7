package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/lockproxy/lockproxy/resp"
)

const readChunk = 64 << 10

func (c *Conn) readLoop() {
	defer c.h.WG.Done()
	defer func() {
		// A panic while handing out replies (in a reply hook) fails this
		// connection — its clients get errors — not the whole process.
		if r := recover(); r != nil {
			c.h.Log.Error("closing an upstream connection after an internal error",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.Fail(fmt.Errorf("internal error: %v", r))
		}
	}()
	for c.readOnce(c.nc.Read) {
	}
}

// replyReader is the read side of an upstream connection: its buffer, and
// scratch space reused for every read.
type replyReader struct {
	buf    []byte
	start  int // buf[start:] is a reply not yet complete
	f      resp.Framer
	frames [][]byte
	ps     []Pend
	// touched: the sinks a batch's replies were queued for (corked, in
	// front of a cluster), to be written once the batch is out.
	touched []Touched
}

// Touched is a sink a batch's replies were corked for, and how many of its
// replies reached its output (Poller.CorkList, UncorkAll).
type Touched struct {
	s    Sink
	done int
}

// readOnce reads once with read, frames the complete replies and hands them
// out. It reports false once the connection has failed. read may answer
// ErrWouldBlock (an event loop's socket with nothing more to read).
func (c *Conn) readOnce(read func([]byte) (int, error)) bool {
	r := &c.rr
	if r.buf == nil {
		r.buf = make([]byte, 0, readChunk)
	}
	// Make room: compact what is left of a partial frame to the front,
	// and grow only while a single frame does not fit.
	if r.start > 0 && (r.start == len(r.buf) || cap(r.buf)-len(r.buf) < readChunk/4) {
		n := copy(r.buf, r.buf[r.start:])
		r.buf = r.buf[:n]
		r.start = 0
	}
	if cap(r.buf)-len(r.buf) < readChunk/4 {
		nb := make([]byte, len(r.buf), 2*cap(r.buf))
		copy(nb, r.buf)
		r.buf = nb
	}
	n, err := read(r.buf[len(r.buf):cap(r.buf)])
	n = max(n, 0)
	r.buf = r.buf[:len(r.buf)+n]
	r.frames = r.frames[:0]
	if c.pipe.Load() && r.start < len(r.buf) {
		c.owner.Push(r.buf[r.start:])
		r.start = len(r.buf)
	}
	for r.start < len(r.buf) {
		m, ferr := r.f.Frame(r.buf[r.start:])
		if ferr != nil {
			c.Fail(fmt.Errorf("unreadable reply from Valkey: %w", ferr))
			return false
		}
		if m == 0 {
			break
		}
		r.frames = append(r.frames, r.buf[r.start:r.start+m])
		r.start += m // the Framer starts afresh by itself
	}
	if len(r.frames) > 0 {
		corked := &r.touched
		if c.lp != nil {
			corked = c.lp.CorkList() // written at the end of the loop's round
		}
		if !c.dispatch(r.frames, &r.ps, corked) {
			return false
		}
	}
	if r.start == len(r.buf) {
		r.buf = r.buf[:0]
		r.start = 0
		// One big reply must not pin its buffer for the connection's
		// life; a stream of them keeps it (regrowing it for each
		// reply would allocate several times the reply's size).
		if cap(r.buf) > 4*readChunk && n < readChunk {
			r.buf = make([]byte, 0, readChunk)
		}
	}
	switch {
	case err == nil || err == ErrWouldBlock:
		return true
	case IsTimeout(err) && !c.dead.Load():
		err = replyTimeout(c.h.ReplyTimeout) // a net.Error timeout, as the proxy counts it
	}
	c.Fail(err)
	return false
}

// dispatch hands each frame to its sink. Pending entries are popped for
// the whole read at once, so the queue lock is taken once per read, not once
// per reply.
//
// In front of a cluster the replies are corked: a session's replies in one
// batch are rarely consecutive (its pipeline's other replies come from other
// nodes), so each is queued and every sink touched gets one write at the
// end, instead of one per reply: the end of this batch, or for a connection
// an event loop reads, the end of the loop's reading in this round.
func (c *Conn) dispatch(frames [][]byte, ps *[]Pend, corked *[]Touched) bool {
	if c.stream.Load() {
		for _, fr := range frames {
			c.owner.Push(fr)
			if c.resets.Load() > 0 && string(fr) == "+RESET\r\n" && c.resets.Add(-1) == 0 {
				c.stream.Store(false)
				select {
				case c.unstream <- struct{}{}:
				default:
				}
			}
		}
		return true
	}
	want := 0
	for _, fr := range frames {
		if fr[0] != '>' {
			want++
		}
	}
	c.mu.Lock()
	*ps = c.q.popN((*ps)[:0], want)
	c.armLocked(want > 0)
	c.flushLocked()
	c.mu.Unlock()
	if len(*ps) < want {
		c.Fail(errors.New("a reply came from Valkey that no command was waiting for"))
		return false
	}
	c.h.RoundTrip(*ps)
	// Consecutive replies for the same session lie next to each other in
	// the read buffer: hand them over as one run (one write to the client
	// for a whole pipelined batch, not one per reply). A run's replies
	// are consecutive in the session's order too.
	var run []byte
	var runS Sink
	var runSeq uint64
	runN := 0
	cork := c.h.Cork
	deliver := func(s Sink, seq uint64, b []byte, n int) {
		if !cork {
			s.Deliver(seq, b, n)
			return
		}
		done := s.DeliverCork(seq, b, n)
		if t := *corked; len(t) > 0 && t[len(t)-1].s == s {
			t[len(t)-1].done += done
		} else {
			*corked = append(t, Touched{s, done})
		}
	}
	flushRun := func() {
		if runN > 0 {
			deliver(runS, runSeq, run, runN)
		}
		run, runS, runN = nil, nil, 0
	}
	i := 0
	for _, fr := range frames {
		if fr[0] == '>' {
			flushRun()
			// Out-of-band push (RESP3): only dedicated connections
			// subscribe or track, so it belongs to the owner, after
			// the replies that came before it; on a connection that
			// takes a client's redirected invalidations, to the relay.
			switch {
			case c.owner != nil:
				c.owner.PushAfter(c, fr)
			case c.relay != nil:
				c.relay(fr)
			default:
				c.h.Log.Warn("dropped a push message on a shared upstream connection", "bytes", len(fr))
			}
			continue
		}
		p := (*ps)[i]
		i++
		if c.owner != nil {
			c.lastSeq, c.haveSeq = p.Seq, true
		}
		if p.Hook == nil && p.Retry == nil && !p.Mute && (p.Route == nil || fr[0] != '-') {
			if runN > 0 && p.Sink == runS && p.Seq == runSeq+uint64(runN) && len(run) < cap(run) && &run[:len(run)+1][len(run)] == &fr[0] {
				run = run[:len(run)+len(fr)]
				runN++
				continue
			}
			flushRun()
			run, runS, runSeq, runN = fr, p.Sink, p.Seq, 1
			continue
		}
		flushRun()
		if p.Route != nil && isRedirect(fr) {
			// Followed on a goroutine of the session's: this reader
			// serves other clients, and an event loop must never wait.
			p.Sink.Redirect(p, fr, c.addr)
			continue
		}
		if p.Retry != nil && bytes.HasPrefix(fr, noscript) {
			if c.retry(p) {
				continue
			}
			fr = append([]byte(nil), c.h.ScriptFlushed...)
		}
		if p.Hook != nil {
			fr = p.Hook(fr)
		}
		if p.Mute {
			fr = nil
		}
		deliver(p.Sink, p.Seq, fr, 1)
	}
	flushRun()
	clear(*ps)
	if c.lp == nil {
		UncorkAll(corked)
	}
	return true
}

// UncorkAll writes the replies corked for each sink in corked, counts
// them as given, and empties the list.
func UncorkAll(corked *[]Touched) {
	for _, t := range *corked {
		t.s.Uncork(t.done)
	}
	clear(*corked)
	*corked = (*corked)[:0]
}

// isRedirect reports whether an error reply is a cluster redirect the proxy
// follows (a Pend's Route, Sink.Redirect): MOVED, ASK or TRYAGAIN.
func isRedirect(fr []byte) bool {
	return bytes.HasPrefix(fr, errMoved) || bytes.HasPrefix(fr, errAsk) || bytes.HasPrefix(fr, errTry)
}

var (
	errMoved = []byte("-MOVED ")
	errAsk   = []byte("-ASK ")
	errTry   = []byte("-TRYAGAIN")
)
