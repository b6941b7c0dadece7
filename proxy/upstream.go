package proxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// pend is one command waiting for its reply on an upstream connection.
type pend struct {
	sink replySink
	// hook, when set, sees the reply before the client does and returns what
	// the client gets. It runs on the upstream reader (after a redirect, on
	// the session's redirect goroutine): keep it short.
	hook func(reply []byte) []byte
	// retry, when set, is an EVALSHA of lockproxy's own script: on NOSCRIPT
	// it is sent again as EVAL (see retry).
	retry []byte
	// seq is the reply's place among the session's (reorder.go).
	seq uint64
	// holds: Valkey may hold the command back for long, and what is
	// queued behind it with it: a client's own EVAL, EVALSHA or FCALL
	// (and their _RO forms), which holds Valkey for as long as it runs, or
	// any command while a CLIENT PAUSE is in force (busyscript.go).
	holds bool
	// mute: the client asked for no reply to this command (CLIENT REPLY
	// OFF or SKIP): the reply is taken, and its hook run, but not sent.
	mute bool
	// route, in front of a cluster, is what following a redirect needs,
	// for the sink to interpret (a *clusterCmd, cluster_redirect.go):
	// error replies go through it. nil otherwise.
	route any
	// fam is the command's family; sent is when it was queued on the
	// connection (monoNow), 0 for a command not timed.
	fam  family
	sent int64
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
	h     *upHost
	nc    net.Conn
	addr  string
	owner connOwner // the one session of a dedicated connection; nil when shared
	// vid is Valkey's id of a dedicated connection (clientids.go).
	vid int64
	// spare: set on a pool's side connection, for commands that must not
	// queue behind a script call (busyscript.go); nil on any other.
	spare *pool
	// claimer, on a spare, is the session it was handed to for a command
	// not yet queued there (session.claim): no other session takes it
	// meanwhile (under claimMu).
	claimMu sync.Mutex
	claimer replySink
	// relay, on a connection Valkey redirects a client's invalidations
	// to (CLIENT TRACKING ... REDIRECT, tracking.go), takes its pushes.
	relay func(push []byte)
	// lastSeq is the sequence number of the last reply the reader handed
	// its owner (have: one was handed): a push that came after it on this
	// connection reaches the client after it (session.PushAfter). Only the
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
	dw  directWriter    // writes to raw; under mu
	// Only the event loop that reads c touches these (readUp).
	loopRead  func([]byte) (int, error)
	loopArmed bool

	rr replyReader // used by one reader: readLoop, or the event loop

	// A shared connection read by an event loop rather than a goroutine
	// of its own: lp reads fd, and the reply deadline is a timer.
	lp       poller
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
	// login: username and password are a client's own login, given last,
	// once the proxy's credentials (proxyUser, proxyPass) set the
	// connection up (handshake).
	login                bool
	proxyUser, proxyPass string
	// clientID, when set, gets Valkey's id of the connection (CLIENT ID,
	// asked last).
	clientID *int64
	// tracking: CLIENT TRACKING ON and its options, as this connection
	// must track for its session (tracking.go).
	tracking []string
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

// nodeError is a failed connect to Valkey with the address it was to: in
// front of a cluster, the node the command's slot led to, which the client's
// error must name (the configured upstream is only where the map came from).
type nodeError struct {
	addr string
	err  error
}

func (e *nodeError) Error() string { return e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }

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
	c.h.failed(c.addr, err, len(ps))
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
		reply := resp.AppendError(nil, c.h.lostText(c.addr, err, c.owner != nil))
		if c.owner != nil && c.owner.InputEnded() {
			// Valkey closed the connection the client half-closed: what
			// it left unanswered stays so, as it would directly.
			reply = nil
		}
		for _, p := range ps {
			r := reply
			if p.mute {
				r = nil
			}
			p.sink.Deliver(p.seq, r, 1)
		}
	}
	if c.onDead != nil {
		c.onDead(c)
	}
	if c.owner != nil {
		c.owner.Lost(c, err, len(ps) > 0 && !c.stream.Load())
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

// claim hands the spare c to s until s gives it back (unclaim): false when
// another holds it.
func (c *upConn) claim(s replySink) bool {
	c.claimMu.Lock()
	defer c.claimMu.Unlock()
	if c.claimer != nil {
		return false
	}
	c.claimer = s
	return true
}

// unclaim gives c back, if s holds it.
func (c *upConn) unclaim(s replySink) {
	c.claimMu.Lock()
	if c.claimer == s {
		c.claimer = nil
	}
	c.claimMu.Unlock()
}
