package proxy

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/evloop"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/replies"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// session is one client connection. An event loop reads its commands and
// handles them in its rounds (session_loop.go, package evloop); a TLS
// client, and one that moved onto a dedicated connection, has a goroutine
// of its own instead (serveGo). Handling a command decides where it goes
// and queues it for an upstream connection. Whoever reads a reply (the
// loop, or an upstream connection's reader goroutine) hands it to the
// session (deliverN), which puts it in command order (package replies) and
// writes it to the socket at once when the socket takes it; what the
// socket does not take waits in out for a writer goroutine, started the
// first time that happens, so a client that reads slowly never blocks a
// shared upstream connection.
type session struct {
	// grants: the grants this session was given, to tell a lost one
	// (package locks).
	grants locks.Grants
	p      *Proxy
	id     uint64
	nc     net.Conn
	rd     *resp.Reader
	addr   string
	host   string // the client's IP, the owner under session: client_addr
	// connOwner is the session's owner identity under session: connection.
	connOwner string
	nameA     atomic.Pointer[string] // name, readable from upstream readers
	// userOwnerA: clientState's userOwner, readable from other sessions
	// (LOCKPROXY SESSIONS); nil until the first login.
	userOwnerA atomic.Pointer[string]
	keys       []keyspec.Key // scratch for key extraction

	// The client's connection state (connstate.go).
	clientState

	// node, in front of a cluster, is the primary of the slot of the
	// command being handled (cluster_route.go).
	node string
	// sentMap: the slot map the session's last keyed command was routed
	// by (cluster_route.go: a new map waits for what went under the old).
	sentMap *cluster.Map
	// ownMovable: the dedicated connection holds no state a later command
	// needs (it was opened for MULTI or a blocking command), so in a
	// cluster it may be left for another node's (cluster_route.go).
	ownMovable bool

	// redirects: MOVED, ASK and TRYAGAIN replies being followed
	// (cluster_redirect.go).
	redirects redirects

	ded       *upstream.Conn              // the session's own upstream connection, once it needs one
	trk       *clients.Tracking           // client-side caching, once turned on (tracking.go)
	redirTo   clients.Target              // this session as other sessions' REDIRECT target (tracking.go)
	shards    atomic.Pointer[shardFollow] // shard channels, in front of a cluster (cluster_shard_follow.go)
	dedMu     sync.Mutex
	shared    *upstream.Conn // cached shared connection for key()
	sharedKey poolKey

	// Commands read but not yet handed to their upstream connection: a whole
	// pipelined batch goes over in one locked append.
	bconn *upstream.Conn
	bbuf  []byte
	bpend []upstream.Pend
	// bmarks are bpend's commands' marks (cmdstats.go), queued in marks
	// when flush numbers their replies.
	bmarks []cmdMark
	// cur is the mark of the command being handled; resumed: that command
	// was put back (step.go) and keeps it.
	cur     cmdMark
	resumed bool
	// readAt is when the commands being handled were read (MonoNow): set
	// once per round of an event loop (pump), and on a goroutine by the
	// first command after each wait for input (beforeFill clears it).
	readAt int64
	// last is the connection the session's last batch went to. In front
	// of one primary, switching to another one waits for the replies owed
	// on it first (see forwardRetry).
	last *upstream.Conn
	// seqNext is the sequence number the next reply owed gets (package replies;
	// only the session's goroutine or loop touches it).
	seqNext uint64

	inflight atomic.Int64 // commands sent whose replies are not in out yet
	waitLE   atomic.Int64 // the session goroutine waits for inflight <= this (-1: not waiting)
	drained  chan struct{}

	outMu sync.Mutex
	out   replies.Queue
	// outSeq is the sequence number of the reply the client gets next;
	// held keeps the replies that came before it (package replies).
	outSeq uint64
	held   replies.Held
	// marks: one per reply owed, in sequence order, taken as the replies
	// reach the output (cmdstats.go); framer splits a run of them.
	marks     markQueue
	framer    resp.Framer
	gather    []byte // scratch for the replies written together
	outClosed bool   // no more output: the client is gone or over its limit
	writing   int    // bytes of a batch the writer goroutine took from out and is writing
	// writer is set once the writer goroutine runs: it starts the first
	// time the socket does not take a reply at once, so an idle client
	// costs no goroutine.
	writer    bool
	raw       syscall.RawConn
	dw        upstream.DirectWriter // writes to raw; under outMu
	wake      chan struct{}
	stopW     chan struct{}
	writerEnd chan struct{}

	lost atomic.Bool // the dedicated upstream connection died
	// inputEnded: the client ended its side of the connection (it may have
	// only half-closed it): like Valkey, the proxy still sends every reply
	// to what it read, then closes.
	inputEnded atomic.Bool

	// Event-loop mode (package evloop, session_loop.go, loopclient.go).
	// home is the loop the session was given at accept (nil: it runs on a
	// goroutine of its own from the start); lp is set while that loop
	// serves it, and only the loop touches it. src is the loop's record of
	// the session, and the reader of its socket while on the loop.
	home   *evloop.Loop
	lp     *evloop.Loop
	src    evloop.Member
	paused atomic.Bool // the loop stopped reading it until inflight <= waitLE, or a job ends (waitJob)
	// holds: Valkey may hold the command being handled back for long
	// (upstream.Pend.Holds, busyscript.go).
	holds bool
	// claimed is the spare connection handed to the session for its
	// command (busyscript.go), until the command is queued there.
	claimed *upstream.Conn
	// family is the command being handled's family (package commands), which its
	// pending entries carry for the round-trip histogram.
	family commands.Family
	// asked is the step the command being handled asks of the engine
	// (offLoop, aside), which handle returns.
	asked step
	// again is a command a step put back, to be read again (read).
	again *resp.Command
	// learned is what jobs run off the loop learned for the command they
	// were run for (step.go).
	learned learned
	// capture, while a command split by slot runs its parts as the
	// client's own (cluster_split_locks.go), takes each part's reply.
	capture func(reply []byte)
	// publishDue: the command being handled may change what CLIENT LIST
	// shows; its state is published before the proxy's own reply to it
	// leaves (local), so that a client that read the reply and asks
	// CLIENT LIST elsewhere sees the change, as Valkey shows it.
	publishDue bool

	// For CLIENT LIST (clients.go): the published state, the last
	// command, when the client last sent something (unix ns), when it
	// connected, the proxy's address it connected to, its socket.
	snap    atomic.Pointer[clients.Snap]
	lastCmd atomic.Pointer[string]
	// monitorOn is monitor, for the upstream reader (clients.OwnLines).
	monitorOn atomic.Bool
	// blocked: a blocking command is in flight on the session's own
	// connection (CLIENT LIST's flag b).
	blocked    atomic.Bool
	lastActive atomic.Int64
	since      time.Time
	laddr      string
	sockFd     int
}

func newSession(p *Proxy, nc net.Conn, id uint64) *session {
	s := &session{
		p:           p,
		id:          id,
		nc:          nc,
		addr:        nc.RemoteAddr().String(),
		clientState: clientState{proto: 2, db: p.opts.Upstream.DB, authed: !p.requireAuth, userOwner: defaultUserOwner},
		drained:     make(chan struct{}, 1),
		wake:        make(chan struct{}, 1),
		stopW:       make(chan struct{}),
		writerEnd:   make(chan struct{}),
	}
	s.waitLE.Store(-1)
	s.redirTo.ID, s.redirTo.Deliver = id, s.invalidated
	s.host, _, _ = net.SplitHostPort(s.addr)
	s.sockFd = -1
	if s.raw = s.dw.Init(nc); s.raw != nil {
		_ = s.raw.Control(func(fd uintptr) { s.sockFd = int(fd) })
	}
	s.since, s.laddr = time.Now(), localAddr(nc)
	s.lastActive.Store(s.since.UnixNano())
	s.publish()
	s.connOwner = "conn:" + p.instance + "-" + strconv.FormatUint(id, 10)
	s.keys = make([]keyspec.Key, 0, 8)
	s.rd = resp.NewReader(nc, p.limits)
	return s
}

// beforeFill runs each time the session is about to wait for its client:
// queued commands go upstream first, and the idle clock starts when the
// client has nothing in flight.
func (s *session) beforeFill() {
	s.flush()
	s.unclaim()
	s.readAt = 0
	s.lastActive.Store(time.Now().UnixNano())
	idle := s.p.opts.ClientIdleTimeout.D()
	switch {
	case s.p.shuttingDown.Load() || s.lost.Load():
		_ = s.nc.SetReadDeadline(time.Now())
	case idle <= 0:
	case s.inflight.Load() == 0 && (s.ded == nil || !s.ded.Streaming()):
		_ = s.nc.SetReadDeadline(time.Now().Add(idle))
	default:
		_ = s.nc.SetReadDeadline(time.Time{})
	}
}

func (s *session) key() poolKey {
	return poolKey{proto: s.proto, db: s.db, node: s.node, login: s.login}
}

// serveGo runs the session on a goroutine of its own until the client
// leaves, breaks the protocol, or the proxy shuts down.
func (s *session) serveGo() {
	// About to block on the client socket: hand over what was read so far,
	// so a pipelined batch reaches Valkey without waiting for more input.
	s.rd.SetSource(s.nc)
	s.rd.SetBeforeFill(s.beforeFill)
	s.finish(s.loop())
}

// finish ends the session: what was read still goes to Valkey, as it would
// directly; when graceful, the replies owed are delivered first.
func (s *session) finish(graceful bool) {
	s.flush()
	s.unclaim()
	if graceful {
		if c := s.ded; c != nil && s.inputEnded.Load() {
			// Pass the end of input on: Valkey answers what it read,
			// then closes, as it would for the client itself (a blocked
			// BLPOP, a subscription end there, unanswered).
			c.CloseWrite()
			select {
			case <-c.Done():
			case <-s.p.force:
			}
		}
		s.waitDrain(0)
	}
	s.endMonitor()
	s.outMu.Lock()
	s.outClosed = true
	started := s.writer
	s.outMu.Unlock()
	close(s.stopW)
	if started {
		<-s.writerEnd
	}
	s.nc.Close()
	s.redirTo.End()
	s.closeTracking()
	if s.ded != nil {
		s.ded.Close()
	}
	s.p.sessionDone(s)
}

// abort cuts the client off from any goroutine. It shuts the socket down
// rather than closing it: an event loop may be about to read the descriptor,
// and a closed one could already belong to another connection. The session
// then meets end of input and finishes as usual.
func (s *session) abort() {
	if s.raw == nil {
		s.nc.Close()
		return
	}
	_ = s.raw.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}

// loop reads and handles commands until the session must end, and reports
// whether the replies still owed should be waited for. A panic while handling
// one client's command ends that client's session, logged with its stack,
// and never the process: the other clients keep their connections. (Bugs
// found that way are fixed, not left to this net.)
func (s *session) loop() (graceful bool) {
	defer func() {
		if r := recover(); r != nil {
			s.p.log.Error("closing a client after an internal error", "client", s.addr,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			graceful = false
		}
	}()
	for {
		cmd, st := s.read()
		if st.do == stepNext {
			st = s.handle(cmd)
		}
		if st.do == stepEnd {
			return st.graceful
		}
		s.carryHere(cmd, st)
		if s.ded != nil && s.ded.Piped() {
			s.pipeClient()
			return true
		}
	}
}

// carryHere carries out a step on the session's own goroutine. Only stepNext
// and stepIdle reach it today (the other steps are asked only on an event
// loop, see step.go); the others are carried out here too, by waiting
// where the loop would have let its other clients go on, so that a step
// asked without checking s.lp still handles the command.
func (s *session) carryHere(cmd resp.Command, st step) {
	switch st.do {
	case stepSettle:
		s.flush()
		s.waitDrain(0)
		s.putBack(cmd)
	case stepOffLoop:
		s.flush()
		st.job()
		s.putBack(cmd)
	case stepAside:
		s.flush()
		r := st.answer()
		if st.mute {
			r = nil
		}
		s.deliverN(s.owe(), r, 1)
	case stepOwnConn:
		s.putBack(cmd)
	}
}

// pipeClient copies what the client sends to its dedicated connection as
// it is, once that has become a replication stream (SYNC, PSYNC: a replica
// sends REPLCONF ACKs, and nothing it sends is the proxy's business), until
// either side ends.
func (s *session) pipeClient() {
	c := s.ded
	_ = s.nc.SetReadDeadline(time.Time{})
	if b := s.rd.Take(); len(b) > 0 && !c.Send(b, nil, nil) {
		return
	}
	buf := make([]byte, 16<<10)
	for {
		n, err := s.nc.Read(buf)
		if n > 0 && !c.Send(buf[:n], nil, nil) {
			return
		}
		if err != nil {
			return
		}
	}
}

// forward queues raw for the session's upstream connection. hook, if set,
// shapes the reply.
func (s *session) forward(raw []byte, hook func([]byte) []byte) {
	s.forwardRetry(raw, nil, hook)
}

// forwardRetry is forward with a command to send instead when Valkey answers
// NOSCRIPT (an EVALSHA's EVAL twin).
func (s *session) forwardRetry(raw, retry []byte, hook func([]byte) []byte) {
	if capture := s.capture; capture != nil {
		h := hook
		hook = func(r []byte) []byte {
			if h != nil {
				r = h(r)
			}
			capture(r)
			return r
		}
	}
	c := s.target()
	if c == nil {
		return
	}
	if c != s.bconn {
		s.flush()
		if s.last != nil && s.last != c && (s.p.cl == nil || s.last.Addr() == c.Addr() && !s.last.Dead()) {
			// Two connections to one server (another protocol or
			// database, or the session's own): commands sent on the new
			// one could run before those still in flight on the old.
			// Switching between cluster nodes needs no wait: commands on
			// different nodes touch different keys, so the session goes
			// on at once, and the replies are put back in order as they
			// arrive (package replies).
			s.waitDrain(0)
		}
		s.bconn = c
	}
	s.bbuf = append(s.bbuf, raw...)
	s.bpend = append(s.bpend, upstream.Pend{Sink: s, Hook: hook, Retry: retry, Mute: s.mute, Holds: s.holds, Route: s.clusterPend(raw), Fam: uint8(s.family)})
	s.bmarks = append(s.bmarks, s.cur)
	if len(s.bbuf) >= 64<<10 {
		s.flush()
	}
	if max := int64(s.p.opts.MaxPipeline); s.inflight.Load()+int64(len(s.bpend)) >= max {
		s.flush()
		if s.lp != nil {
			s.pause(max / 2) // the loop reads on once the replies caught up
		} else {
			s.waitDrain(max / 2)
		}
	}
}

// target returns the upstream connection for the session's next command,
// answering the client with an error when there is none.
func (s *session) target() *upstream.Conn {
	if s.ded != nil {
		return s.ded
	}
	c := s.shared
	if c == nil || s.sharedKey != s.key() || c.Dead() {
		var err error
		if c, err = s.poolConn(s.key()); err != nil {
			s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
			return nil
		}
		s.shared, s.sharedKey = c, s.key()
	}
	return s.besideHeld(c)
}

// poolConn returns the session's connection of the pool key. A dial done off
// the event loop for the command being handled answers in its place when it
// failed: the loop must not dial again (a handshake Valkey refuses, SELECT of
// a database it does not have, is not remembered by the pool).
func (s *session) poolConn(key poolKey) (*upstream.Conn, error) {
	if d := s.learned.dialed; d != nil {
		s.learned.dialed = nil
		if d.key == key && d.err != nil {
			return nil, d.err
		}
	}
	return s.p.pool(key).Conn(int(s.id))
}

// dialResult is what an off-loop dial of a pool's connection gave.
type dialResult struct {
	key poolKey
	err error
}

// flush hands the queued batch to its upstream connection.
func (s *session) flush() {
	if len(s.bpend) == 0 {
		return
	}
	c := s.bconn
	n := int64(len(s.bpend))
	// A connection in stream mode pairs no reply with a command: nothing
	// is counted, and what comes goes to the client as it comes.
	counted := !c.Streaming()
	if counted {
		s.inflight.Add(n)
		for i := range s.bpend {
			s.bpend[i].Seq = s.seqNext
			s.seqNext++
		}
		s.queueMarks(s.bmarks) // before Send: a reply may come at once
	}
	if !c.Send(s.bbuf, s.bpend, s.poller()) {
		// The connection died before this batch left: nothing was sent, so
		// each command gets the same error its in-flight siblings got.
		reply := resp.AppendError(nil, s.p.lostErrorText(c))
		for _, p := range s.bpend {
			r := reply
			if p.Mute {
				r = nil
			}
			if counted {
				s.deliverN(p.Seq, r, 1)
			} else {
				s.write(r)
			}
		}
	} else {
		s.last = c
	}
	if c == s.claimed {
		s.unclaim() // its commands are in the spare's queue now
	}
	s.bbuf = s.bbuf[:0]
	if cap(s.bbuf) > 1<<20 {
		s.bbuf = nil
	}
	clear(s.bpend)
	s.bpend = s.bpend[:0]
	s.bmarks = s.bmarks[:0]
}

// waitDrain blocks until at most le replies are outstanding. An event loop
// does not wait here for replies it reads itself: where a command would
// wait for them, it asks for a step instead (stepSettle: settle,
// asideFirst, switchFirst, heldFirst; stepOwnConn: route, before
// goDedicated), and forwardRetry pauses the loop's reading of the client
// at max_pipeline. What is left there is a switch away from a connection
// that died, whose replies its failure answers.
func (s *session) waitDrain(le int64) {
	if s.lp != nil && s.inflight.Load() > le {
		s.lp.Uncork() // what this round queued must leave before any reply can come
	}
	for s.inflight.Load() > le {
		s.waitLE.Store(le)
		if s.inflight.Load() <= le {
			break
		}
		select {
		case <-s.drained:
		case <-s.p.force:
			s.waitLE.Store(-1)
			return
		}
	}
	s.waitLE.Store(-1)
}

// local answers the client from the proxy itself, after every reply it is
// still owed, so replies stay in command order: with replies owed, it is
// held until their turn has come (package replies), and the session goes on.
func (s *session) local(reply []byte) {
	if s.publishDue {
		s.publish()
	}
	if s.capture != nil {
		s.capture(reply)
		return
	}
	if s.mute {
		return
	}
	if s.trk != nil {
		s.sendHeld() // CLIENT CACHING or MULTI held for this command's node (tracking.go)
	}
	s.flush()
	if s.ded != nil && s.ded.Streaming() {
		s.write(reply) // nothing pairs with commands there: no order to keep
		return
	}
	s.deliverN(s.owe(), reply, 1)
}

// owe counts one more reply owed, answered by the proxy itself, and returns
// its sequence number.
func (s *session) owe() uint64 {
	s.inflight.Add(1)
	seq := s.seqNext
	s.seqNext++
	s.outMu.Lock()
	s.marks.push(s.cur)
	s.outMu.Unlock()
	return seq
}

// Lost is called when the session's dedicated connection died. The
// state that lived on it is gone, so the session ends rather than move on
// silently; the client is told why first (told: commands in flight got the
// error as their reply already).
func (s *session) Lost(c *upstream.Conn, err error, told bool) {
	if errors.Is(err, upstream.ErrClosed) || s.lost.Swap(true) {
		return
	}
	if !told && !c.Piped() && !s.inputEnded.Load() {
		// Nothing was in flight to carry the news (or the replies do not
		// pair): say it before closing, rather than let the client meet
		// a closed connection on its next command.
		s.push(resp.AppendError(nil, errDedicatedLost(c.Addr(), err)))
	}
	_ = s.nc.SetReadDeadline(time.Now())
}

// goDedicated moves the session onto its own upstream connection, replaying
// its state there. It reports false (having answered the client) on failure.
func (s *session) goDedicated(withCreds bool) bool {
	if s.ded != nil {
		return true
	}
	s.flush()
	s.waitDrain(0)
	st := s.p.sharedState(s.key()) // logged in as the session is
	st.Name, st.LibName, st.LibVer = s.name, s.libName, s.libVer
	st.Auth = withCreds && st.Auth
	var vid int64
	st.ClientID = &vid
	c, err := s.p.dial(st, s)
	if err != nil {
		s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
		return false
	}
	c.SetValkeyID(vid)
	s.p.vids.Add(vid, s.id)
	s.dedMu.Lock()
	s.ded = c
	s.dedMu.Unlock()
	s.p.stats.dedicated.Add(1)
	return true
}

// goStream puts the dedicated connection into stream mode, after every reply
// owed so far has arrived; with pipe, into a byte pipe.
func (s *session) goStream(pipe bool) {
	s.flush()
	s.waitDrain(0)
	s.ded.StartStream(pipe)
}

// setName changes the client name (CLIENT SETNAME, HELLO SETNAME): under
// session: client_name, the owner of the locks this connection takes and
// releases from now on.
func (s *session) setName(name string) {
	if name == s.name {
		return
	}
	s.name = name
	s.nameA.Store(&name)
}

func (s *session) nameSnapshot() string {
	if n := s.nameA.Load(); n != nil {
		return *n
	}
	return ""
}

// dedicated returns the session's own upstream connection, if any. It is
// read from other goroutines (Sentinel failover), hence the lock.
func (s *session) dedicated() *upstream.Conn {
	s.dedMu.Lock()
	defer s.dedMu.Unlock()
	return s.ded
}
