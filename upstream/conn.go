package upstream

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// Pend is one command waiting for its reply on a connection.
type Pend struct {
	// Sink gets the reply.
	Sink Sink
	// Hook, when set, sees the reply before the client does and returns
	// what the client gets. It runs on the reader (after a redirect, on
	// the session's redirect goroutine): keep it short.
	Hook func(reply []byte) []byte
	// Retry, when set, is an EVALSHA of lockproxy's own script: on
	// NOSCRIPT it is sent again as EVAL (retry.go).
	Retry []byte
	// Seq is the reply's place among the sink's.
	Seq uint64
	// Holds: Valkey may hold the command back for long, and what is
	// queued behind it with it: a client's own EVAL, EVALSHA or FCALL
	// (and their _RO forms), which holds Valkey for as long as it runs, or
	// any command while a CLIENT PAUSE is in force (Conn.Holds).
	Holds bool
	// Mute: the client asked for no reply to this command (CLIENT REPLY
	// OFF or SKIP): the reply is taken, and its hook run, but not sent.
	Mute bool
	// Route, in front of a cluster, is what following a redirect needs,
	// for the sink to interpret: error replies go through Sink.Redirect.
	// nil otherwise.
	Route any
	// Fam is the command's family, for the round-trip histograms (the
	// proxy's numbering); Sent is when Send queued it (MonoNow), 0 for a
	// command not timed.
	Fam  uint8
	Sent int64
}

// Conn is one connection to Valkey. Any number of sessions write commands
// into wbuf, sent in batches (Valkey then reads many commands per system
// call, which is where a multiplexing proxy gains its throughput): by the
// event loop at the end of its round, by whoever finds the connection idle,
// by the reader after it handed out replies, or by a writer goroutine for
// what the socket did not take at once. The reader — an event loop for a
// shared connection, a goroutine of its own otherwise — frames the replies
// and hands each to the sink at the head of the queue. Replies come back
// in the order commands were written, so the queue is all the routing there
// is.
type Conn struct {
	h     *Host
	nc    net.Conn
	addr  string
	owner Owner // the one session of a dedicated connection; nil when shared
	// vid is Valkey's id of the connection (CLIENT ID), when asked for
	// at the handshake; 0 otherwise.
	vid int64
	// spareOf: set on a pool's side connection, for commands that must
	// not queue behind a script call; nil on any other.
	spareOf *Pool
	// claimer, on a spare, is the sink it was handed to for a command
	// not yet queued there (Claim): no other takes it meanwhile (under
	// claimMu).
	claimMu sync.Mutex
	claimer Sink
	// relay, on a connection Valkey redirects a client's invalidations
	// to (CLIENT TRACKING ... REDIRECT), takes its pushes.
	relay func(push []byte)
	// lastSeq is the sequence number of the last reply the reader handed
	// its owner (have: one was handed): a push that came after it on this
	// connection reaches the client after it (Owner.PushAfter). Only the
	// reader touches them.
	lastSeq uint64
	haveSeq bool

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
	dw  DirectWriter    // writes to raw; under mu
	// Only the event loop that reads c touches these (ReadReady).
	loopRead  func([]byte) (int, error)
	loopArmed bool

	rr replyReader // used by one reader: readLoop, or the event loop

	// A shared connection read by an event loop rather than a goroutine
	// of its own: lp reads fd, and the reply deadline is a timer.
	lp       Poller
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
}

// New makes a Conn of nc, a connection to addr already set up (logged in,
// database selected), for owner's commands alone (a dedicated connection),
// or shared (owner nil); relay, when set, takes the pushes of a connection
// Valkey sends a client's invalidations to. Start it once it has its
// reader (Attach, or none for a goroutine of its own).
func New(h *Host, nc net.Conn, addr string, owner Owner, relay func(push []byte)) *Conn {
	c := &Conn{
		h:     h,
		nc:    nc,
		addr:  addr,
		owner: owner,
		relay: relay,
		wake:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
	}
	if owner != nil {
		c.unstream = make(chan struct{}, 1)
	}
	c.raw = c.dw.Init(nc)
	return c
}

// Start starts c's writer goroutine and, unless an event loop reads it
// (Attach), its reader goroutine.
func (c *Conn) Start() {
	if c.lp != nil {
		c.h.WG.Add(1)
		go c.writeLoop()
		return
	}
	c.h.WG.Add(2)
	go c.writeLoop()
	go c.readLoop()
}

// Addr is the address of the Valkey node c is connected to.
func (c *Conn) Addr() string { return c.addr }

// Dead reports whether c has failed (or was closed).
func (c *Conn) Dead() bool { return c.dead.Load() }

// Err is why c died; nil while it lives.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// SetValkeyID records Valkey's id of c (CLIENT ID), before c is shared.
func (c *Conn) SetValkeyID(id int64) { c.vid = id }

// ValkeyID is Valkey's id of c (SetValkeyID), 0 when not known.
func (c *Conn) ValkeyID() int64 { return c.vid }

// Dedicated reports whether c is one session's own connection.
func (c *Conn) Dedicated() bool { return c.owner != nil }

// Holds reports whether a command Valkey may hold back for long is
// queued on c (Pend.Holds).
func (c *Conn) Holds() bool { return c.q.holds.Load() > 0 }

// idle reports whether nothing is queued or in flight on c.
func (c *Conn) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.q.n == 0 && len(c.wbuf) == 0 && !c.writing
}

// SpareOf is the pool c is a spare of, nil for none.
func (c *Conn) SpareOf() *Pool { return c.spareOf }

// Fail marks the connection dead, answers every command still waiting on it
// with an error, and closes the socket. Safe to call more than once.
func (c *Conn) Fail(err error) {
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
	c.h.Failed(c.addr, err, len(ps))
	if c.lp != nil {
		// The loop may be about to read the descriptor: shut the socket
		// (a write in progress fails at once) and let the loop close it.
		c.timer.Stop()
		_ = c.raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
		c.lp.Detach(c)
	} else {
		c.nc.Close()
	}
	if len(ps) > 0 {
		reply := resp.AppendError(nil, c.h.LostText(c.addr, err, c.owner != nil))
		if c.owner != nil && c.owner.InputEnded() {
			// Valkey closed the connection the client half-closed: what
			// it left unanswered stays so, as it would directly.
			reply = nil
		}
		for _, p := range ps {
			r := reply
			if p.Mute {
				r = nil
			}
			p.Sink.Deliver(p.Seq, r, 1)
		}
	}
	if c.owner != nil {
		c.owner.Lost(c, err, len(ps) > 0 && !c.stream.Load())
	}
}

// CloseWrite shuts the sending side of c once everything queued on it is
// written: Valkey then answers what it read and closes its side.
func (c *Conn) CloseWrite() {
	c.mu.Lock()
	c.endWrite = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Conn) shutWrite() {
	if c.raw != nil {
		_ = c.raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_WR) })
		return
	}
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// Close ends a connection nobody needs any more.
func (c *Conn) Close() { c.Fail(ErrClosed) }

// ErrClosed is why a connection lockproxy closed itself died.
var ErrClosed = errors.New("closed by lockproxy")

// ErrFailover is why a connection dropped to follow a Sentinel failover
// died.
var ErrFailover = errors.New("the primary was switched by Sentinel")

// Claim hands the spare c to s until s gives it back (Unclaim): false when
// another holds it.
func (c *Conn) Claim(s Sink) bool {
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	if c.claimer != nil {
		return false
	}
	c.claimer = s
	return true
}

// Unclaim gives c back, if s holds it.
func (c *Conn) Unclaim(s Sink) {
	c.claimMu.Lock()
	if c.claimer == s {
		c.claimer = nil
	}
	c.claimMu.Unlock()
}
