package proxy

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// pend is one command waiting for its reply on an upstream connection.
type pend struct {
	s *session
	// hook, when set, sees the reply before the client does and returns what
	// the client gets. It runs on the upstream reader (after a redirect, on
	// the session's redirect goroutine): keep it short.
	hook func(reply []byte) []byte
	// retry, when set, is an EVALSHA of lockproxy's own script: on NOSCRIPT
	// it is sent again as EVAL (see retry).
	retry []byte
	// seq is the reply's place among the session's (reorder.go).
	seq uint64
	// mute: the client asked for no reply to this command (CLIENT REPLY
	// OFF or SKIP): the reply is taken, and its hook run, but not sent.
	mute bool
	// cluster, in front of a cluster, is what following a redirect needs
	// (cluster_redirect.go): error replies go through it.
	cluster *clusterCmd
}

// upConn is one connection to Valkey. Any number of sessions write commands
// into wbuf, sent in batches (Valkey then reads many commands per system
// call, which is where a multiplexing proxy gains its throughput): by the
// event loop at the end of its round, by whoever finds the connection idle,
// by the reader after it handed out replies, or by a writer goroutine for
// what the socket did not take at once. The reader — an event loop for a
// shared connection, a goroutine of its own otherwise — frames the replies
// and hands each to the session at the head of the queue. Replies come back
// in the order commands were written, so the queue is all the routing there
// is.
type upConn struct {
	p     *Proxy
	nc    net.Conn
	addr  string
	owner *session // the one session of a dedicated connection; nil when shared

	// stream is set on a dedicated connection whose replies no longer pair
	// one-to-one with commands (SUBSCRIBE, MONITOR, CLIENT REPLY OFF): every
	// frame then goes straight to the owner, in arrival order.
	stream atomic.Bool
	// pipe is set (with stream) once a replication stream starts (SYNC,
	// PSYNC): the bytes are no longer RESP frames (the RDB payload has no
	// CRLF after it), so they go to the owner as they arrive.
	pipe atomic.Bool
	// resets counts the RESETs sent in stream mode whose +RESET has not
	// come: with the last, replies pair with commands again, and unstream
	// tells the session.
	resets   atomic.Int32
	unstream chan struct{}
	dead     atomic.Bool
	// blockWait is how long the blocking commands in flight may wait on the
	// server (nanoseconds; -1 forever): the reply deadline allows for it.
	blockWait atomic.Int64
	armed     bool // a reply deadline is set (under mu)

	raw syscall.RawConn // nil for TLS: no direct writes
	dw  directWriter    // writes to raw; under mu
	// Only the event loop that reads c touches these (readUp).
	loopRead  func([]byte) (int, error)
	loopArmed bool

	rr replyReader // used by one reader: readLoop, or the event loop

	// A shared connection read by an event loop rather than a goroutine
	// of its own: lp reads fd, and the reply deadline is a timer.
	lp       *loop
	fd       int
	timer    *time.Timer
	deadline time.Time // under mu

	mu      sync.Mutex
	wbuf    []byte
	writing bool // the writer goroutine is writing a batch it took from wbuf
	q       pendQueue
	err     error // why it died

	// endWrite: shut the sending side once wbuf is written (the client
	// half-closed its connection; under mu).
	endWrite bool

	wake chan struct{}
	quit chan struct{}
	// onDead is called once, after the connection failed and its pending
	// commands were answered (the pool forgets the connection there).
	onDead func(*upConn)
}

// connState is what a fresh upstream connection must be told before it can
// carry a session's commands.
type connState struct {
	proto              int
	db                 int
	username, password string
	auth               bool // log in with username/password
	name               string
	libName, libVer    string
	// bare: no lockproxy scripts (a one-off connection for a command that
	// must run while Valkey is busy, when SCRIPT LOAD would be refused).
	bare bool
	node string // in a cluster: the node to connect to
}

// replyError is an error reply Valkey gave during the handshake (for example
// "ERR DB index is out of range"); the client gets it as it is.
type replyError struct{ msg string }

func (e *replyError) Error() string { return e.msg }

// slowError: Valkey accepted the connection but did not answer its
// handshake in time; it is alive, and busy.
type slowError struct{ wait time.Duration }

func (e *slowError) Error() string {
	return fmt.Sprintf("connected, but no answer within %s", e.wait)
}

// dial connects to Valkey and replays st on the new connection.
func (p *Proxy) dial(st connState, owner *session) (*upConn, error) {
	nc, addr, err := p.connect(st)
	if err != nil {
		return nil, err
	}
	c := &upConn{
		p:     p,
		nc:    nc,
		addr:  addr,
		owner: owner,
		wake:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
	}
	if owner != nil {
		c.unstream = make(chan struct{}, 1)
	}
	if c.dw.init(nc) {
		c.raw = c.dw.rc
	}
	if owner == nil && c.raw != nil {
		if lp := p.upstreamLoop(); lp != nil && lp.addUp(c) {
			p.wg.Add(1)
			go c.writeLoop()
			return c, nil
		}
	}
	p.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c, nil
}

// connect opens a connection to Valkey (the primary now, with Sentinel) and
// replays st on it.
func (p *Proxy) connect(st connState) (net.Conn, string, error) {
	addr, err := p.upstreamAddr()
	if st.node != "" {
		addr, err = st.node, nil
	}
	if err != nil {
		return nil, "", err
	}
	d := net.Dialer{Timeout: p.opts.Upstream.DialTimeout.D(), KeepAlive: 30 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		p.forgetMaster()
		return nil, "", err
	}
	if p.opts.UpstreamTLS != nil {
		nc = tls.Client(nc, p.opts.UpstreamTLS)
	}
	// Connected: Valkey is there. Its answers may wait behind a long
	// command (SAVE, DEBUG SLEEP), so they get as long as any reply.
	_ = nc.SetDeadline(time.Now().Add(max(p.opts.Upstream.DialTimeout.D(), p.opts.Upstream.ReplyTimeout.D())))
	if err := handshake(nc, st); err != nil {
		nc.Close()
		if isTimeout(err) {
			err = &slowError{wait: max(p.opts.Upstream.DialTimeout.D(), p.opts.Upstream.ReplyTimeout.D())}
		}
		return nil, "", err
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, addr, nil
}

// handshake sends the commands that make a new connection equal to the
// session state, all in one write, and checks their replies.
func handshake(nc net.Conn, st connState) error {
	var cmds [][]string
	optional := map[int]bool{} // replies whose errors do not matter
	switch {
	case st.proto == 3 && st.auth:
		cmds = append(cmds, []string{"HELLO", "3", "AUTH", userOrDefault(st.username), st.password})
	case st.proto == 3:
		cmds = append(cmds, []string{"HELLO", "3"})
	case st.auth && st.username != "":
		cmds = append(cmds, []string{"AUTH", st.username, st.password})
	case st.auth:
		cmds = append(cmds, []string{"AUTH", st.password})
	}
	if st.db != 0 {
		cmds = append(cmds, []string{"SELECT", fmt.Sprint(st.db)})
	}
	if st.name != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", st.name})
	}
	// CLIENT SETINFO came with Redis 7.2: older servers refuse it, which
	// changes nothing for the client, so its errors are ignored.
	if st.libName != "" {
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"CLIENT", "SETINFO", "LIB-NAME", st.libName})
	}
	if st.libVer != "" {
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"CLIENT", "SETINFO", "LIB-VER", st.libVer})
	}
	// Load lockproxy's own scripts, so its EVALSHAs find them; a user not
	// allowed to (ACL) still gets them by EVAL on NOSCRIPT.
	for _, sc := range rewrite.Scripts {
		if st.bare {
			break
		}
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"SCRIPT", "LOAD", sc.Body})
	}
	if len(cmds) == 0 {
		return nil
	}
	var out []byte
	for _, c := range cmds {
		out = resp.AppendCommandStrings(out, c...)
	}
	if _, err := nc.Write(out); err != nil {
		return err
	}
	buf := make([]byte, 0, 4096)
	for i := range cmds {
		var n int
		var err error
		if buf, n, err = readReply(nc, buf); err != nil {
			return err
		}
		if buf[0] == '-' && !optional[i] {
			return &replyError{msg: string(bytes.TrimRight(buf[1:n], "\r\n"))}
		}
		buf = append(buf[:0], buf[n:]...)
	}
	return nil
}

// readReply reads from nc into buf until buf starts with a whole reply, and
// returns buf (grown as needed) and that reply's length. A blocking read: only
// for connections no reader goroutine or loop serves yet.
func readReply(nc net.Conn, buf []byte) ([]byte, int, error) {
	var f resp.Framer
	for {
		n, err := f.Frame(buf)
		if err != nil || n > 0 {
			return buf, n, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, max(len(buf), 4096))...)[:len(buf)]
		}
		m, err := nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && m == 0 {
			return buf, 0, err
		}
	}
}

func userOrDefault(u string) string {
	if u == "" {
		return "default"
	}
	return u
}

// send queues a batch of raw commands with their pending entries. It reports
// false when the connection is already dead (nothing was queued). From an
// event loop (lp set) the bytes only queue: the loop writes every connection
// it queued to once, at the end of its round (uncork), so Valkey gets one
// batch of all the clients that were ready together.
func (c *upConn) send(b []byte, ps []pend, lp *loop) bool {
	c.mu.Lock()
	if c.dead.Load() {
		c.mu.Unlock()
		return false
	}
	if !c.stream.Load() {
		for _, p := range ps {
			c.q.push(p)
		}
	}
	if lp != nil && c.raw != nil && !c.stream.Load() {
		c.wbuf = append(c.wbuf, b...)
		c.mu.Unlock()
		lp.queued(c)
		return true
	}
	if c.raw != nil && !c.stream.Load() {
		switch {
		case len(c.wbuf) == 0 && !c.writing && c.q.n <= len(ps):
			// An idle connection: nothing queued or in flight before these
			// bytes, so write them now, saving a hand-off to the writer.
			n := c.dw.write(b)
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

// uncork writes what an event loop queued on c during its round.
func (c *upConn) uncork() {
	c.mu.Lock()
	c.flushLocked()
	c.mu.Unlock()
}

func (c *upConn) writeLoop() {
	defer c.p.wg.Done()
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
				c.fail(err)
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

const readChunk = 64 << 10

func (c *upConn) readLoop() {
	defer c.p.wg.Done()
	defer func() {
		// A panic while handing out replies (in a reply hook) fails this
		// connection — its clients get errors — not the whole process.
		if r := recover(); r != nil {
			c.p.log.Error("closing an upstream connection after an internal error",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.fail(fmt.Errorf("internal error: %v", r))
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
	ps     []pend
	// touched: the sessions a batch's replies were queued for (corked,
	// in front of a cluster), to be written once the batch is out.
	touched []touched
}

// touched is a session a batch's replies were corked for, and how many of
// its replies reached its output.
type touched struct {
	s    *session
	done int
}

// readOnce reads once with read, frames the complete replies and hands them
// out. It reports false once the connection has failed. read may answer
// errWouldBlock (an event loop's socket with nothing more to read).
func (c *upConn) readOnce(read func([]byte) (int, error)) bool {
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
		c.owner.push(r.buf[r.start:])
		r.start = len(r.buf)
	}
	for r.start < len(r.buf) {
		m, ferr := r.f.Frame(r.buf[r.start:])
		if ferr != nil {
			c.fail(fmt.Errorf("unreadable reply from Valkey: %w", ferr))
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
			corked = c.lp.corkList() // written at the end of the loop's round
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
	case err == nil || err == errWouldBlock:
		return true
	case isTimeout(err) && !c.dead.Load():
		err = fmt.Errorf("no reply within reply_timeout %s", c.p.opts.Upstream.ReplyTimeout.D())
	}
	c.fail(err)
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dispatch hands each frame to its session. Pending entries are popped for
// the whole read at once, so the queue lock is taken once per read, not once
// per reply.
//
// In front of a cluster the replies are corked: a session's replies in one
// batch are rarely consecutive (its pipeline's other replies come from other
// nodes), so each is queued and every session touched gets one write at the
// end, instead of one per reply: the end of this batch, or for a connection
// an event loop reads, the end of the loop's reading in this round.
func (c *upConn) dispatch(frames [][]byte, ps *[]pend, corked *[]touched) bool {
	if c.stream.Load() {
		for _, fr := range frames {
			c.owner.push(fr)
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
		c.fail(errors.New("a reply came from Valkey that no command was waiting for"))
		return false
	}
	// Consecutive replies for the same session lie next to each other in
	// the read buffer: hand them over as one run (one write to the client
	// for a whole pipelined batch, not one per reply). A run's replies
	// are consecutive in the session's order too.
	var run []byte
	var runS *session
	var runSeq uint64
	runN := 0
	cork := c.p.cl != nil
	deliver := func(s *session, seq uint64, b []byte, n int) {
		if !cork {
			s.deliverN(seq, b, n)
			return
		}
		done := s.deliverCork(seq, b, n, true)
		if t := *corked; len(t) > 0 && t[len(t)-1].s == s {
			t[len(t)-1].done += done
		} else {
			*corked = append(t, touched{s, done})
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
			// subscribe or track, so it belongs to the owner.
			if c.owner != nil {
				c.owner.push(fr)
			} else {
				c.p.log.Warn("dropped a push message on a shared upstream connection", "bytes", len(fr))
			}
			continue
		}
		p := (*ps)[i]
		i++
		if p.hook == nil && p.retry == nil && !p.mute && (p.cluster == nil || fr[0] != '-') {
			if runN > 0 && p.s == runS && p.seq == runSeq+uint64(runN) && len(run) < cap(run) && &run[:len(run)+1][len(run)] == &fr[0] {
				run = run[:len(run)+len(fr)]
				runN++
				continue
			}
			flushRun()
			run, runS, runSeq, runN = fr, p.s, p.seq, 1
			continue
		}
		flushRun()
		if p.cluster != nil && isRedirect(fr) {
			// Followed on a goroutine of the session's: this reader
			// serves other clients, and an event loop must never wait.
			p.s.redirect(p, fr, c.addr)
			continue
		}
		if p.retry != nil && bytes.HasPrefix(fr, noscript) {
			if c.retry(p) {
				continue
			}
			fr = resp.AppendError(nil, errScriptFlushed)
		}
		if p.hook != nil {
			fr = p.hook(fr)
		}
		if p.mute {
			fr = nil
		}
		deliver(p.s, p.seq, fr, 1)
	}
	flushRun()
	clear(*ps)
	if c.lp == nil {
		uncorkAll(corked)
	}
	return true
}

// uncorkAll writes the replies corked for each session in corked, counts
// them as given, and empties the list.
func uncorkAll(corked *[]touched) {
	for _, t := range *corked {
		t.s.uncorkOut()
		t.s.answered(t.done)
	}
	clear(*corked)
	*corked = (*corked)[:0]
}

// flushLocked sends what sessions queued while the connection was busy. The
// reader calls it after taking replies, so commands queued behind in-flight
// ones go out as soon as those are answered. What the socket does not take
// at once is left to the writer goroutine.
func (c *upConn) flushLocked() {
	if len(c.wbuf) == 0 || c.writing || c.raw == nil {
		return
	}
	n := c.dw.write(c.wbuf)
	c.wbuf = c.wbuf[:copy(c.wbuf, c.wbuf[n:])]
	c.armLocked(false)
	if len(c.wbuf) > 0 {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// retry sends a script again as EVAL after NOSCRIPT, if that keeps the
// session's order: only when this command is the session's one command in
// flight. The check and the queueing happen under c.mu, and a session counts
// a command in flight before it takes c.mu to send it, so nothing of the
// session's can slip in between. It reports false when it did not retry.
func (c *upConn) retry(p pend) bool {
	eval := evalFromSHA(p.retry)
	if eval == nil {
		return false
	}
	c.mu.Lock()
	ok := !c.dead.Load() && p.s.inflight.Load() == 1
	if ok {
		c.q.push(pend{s: p.s, hook: p.hook, mute: p.mute, seq: p.seq})
		c.wbuf = append(c.wbuf, eval...)
	}
	c.mu.Unlock()
	if ok {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return ok
}

// armLocked keeps the reply deadline: while commands wait, the next reply
// must come within ReplyTimeout of the moment the oldest of them was written
// (or of the last reply, which proves the server is alive). New writes do not
// postpone it, so steady traffic to a paused server still times out. A
// blocking command adds the time it asked to wait; one that asked to wait
// forever, or a stream, disarms it.
//
// Called with c.mu held: by writers after a write (progress false) and by the
// reader after taking replies (progress true).
func (c *upConn) armLocked(progress bool) {
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
	c.setDeadlineLocked(time.Now().Add(c.p.opts.Upstream.ReplyTimeout.D() + time.Duration(wait)))
	c.armed = true
}

// setDeadlineLocked sets (or, with the zero time, clears) the time by which
// the next reply must arrive. A connection an event loop reads has no
// blocking read to time out: a timer fails it instead.
func (c *upConn) setDeadlineLocked(t time.Time) {
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
func (c *upConn) expire() {
	c.mu.Lock()
	late := c.armed && !c.deadline.IsZero() && !time.Now().Before(c.deadline)
	c.mu.Unlock()
	if late {
		c.fail(fmt.Errorf("no reply within reply_timeout %s", c.p.opts.Upstream.ReplyTimeout.D()))
	}
}

// expectBlock records that a command about to be sent may block for wait
// (negative: forever), so the reply deadline allows for it.
func (c *upConn) expectBlock(wait time.Duration) {
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

// fail marks the connection dead, answers every command still waiting on it
// with an error, and closes the socket. Safe to call more than once.
func (c *upConn) fail(err error) {
	c.mu.Lock()
	if c.dead.Load() {
		c.mu.Unlock()
		return
	}
	c.dead.Store(true)
	c.err = err
	ps := c.q.popN(nil, c.q.n)
	c.mu.Unlock()
	close(c.quit)
	if c.lp != nil {
		// The loop may be about to read the descriptor: shut the socket
		// (a write in progress fails at once) and let the loop close it.
		c.timer.Stop()
		_ = c.raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
		c.lp.detach(c)
	} else {
		c.nc.Close()
	}
	if len(ps) > 0 {
		var msg string
		if c.owner != nil {
			msg = errDedicatedLost(c.addr, err)
		} else {
			msg = errUpstreamLost(c.addr, err)
		}
		reply := resp.AppendError(nil, msg)
		if c.owner != nil && c.owner.inputEnded.Load() {
			// Valkey closed the connection the client half-closed: what
			// it left unanswered stays so, as it would directly.
			reply = nil
		}
		for _, p := range ps {
			r := reply
			if p.mute {
				r = nil
			}
			p.s.deliverN(p.seq, r, 1)
		}
	}
	if c.onDead != nil {
		c.onDead(c)
	}
	if c.owner != nil {
		c.owner.upstreamLost(c, err, len(ps) > 0 && !c.stream.Load())
	}
}

// closeWrite shuts the sending side of c once everything queued on it is
// written: Valkey then answers what it read and closes its side.
func (c *upConn) closeWrite() {
	c.mu.Lock()
	c.endWrite = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *upConn) shutWrite() {
	if c.raw != nil {
		_ = c.raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_WR) })
		return
	}
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.close()
}

// close ends a connection nobody needs any more.
func (c *upConn) close() { c.fail(errClosed) }

var errClosed = errors.New("closed by lockproxy")

var noscript = []byte("-NOSCRIPT")

// pendQueue is a FIFO ring of pending replies that reuses its storage.
type pendQueue struct {
	buf  []pend
	head int
	n    int
}

func (q *pendQueue) push(p pend) {
	if q.n == len(q.buf) {
		nb := make([]pend, max(16, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf = nb
		q.head = 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = p
	q.n++
}

// popN appends up to n entries to dst, oldest first.
func (q *pendQueue) popN(dst []pend, n int) []pend {
	if n > q.n {
		n = q.n
	}
	for i := 0; i < n; i++ {
		j := q.head
		dst = append(dst, q.buf[j])
		q.buf[j] = pend{}
		q.head = (j + 1) % len(q.buf)
	}
	q.n -= n
	return dst
}

func tlsClient(nc net.Conn, cfg *tls.Config) net.Conn { return tls.Client(nc, cfg) }
