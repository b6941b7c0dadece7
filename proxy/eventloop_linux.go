package proxy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/upstream"
	"golang.org/x/sys/unix"
)

// An event loop serves many clients from one goroutine. With a goroutine per
// client, every request costs that goroutine's wake-up by the runtime's
// poller, a read that returns the command and a second read that returns
// EAGAIN before the goroutine parks again; and each client's commands go to
// Valkey in a write of their own. A loop asks epoll once which clients have
// sent something, reads each of them once, and writes what they all sent to
// each upstream connection in one batch at the end of the round. It reads
// the shared upstream connections too, handing each reply straight to its
// client's socket, so nothing crosses a goroutine boundary on the way.
//
// The loop's epoll descriptor is itself registered with Go's poller (an epoll
// descriptor is readable while it has events), so a loop with nothing to do
// parks like any goroutine: no thread sits in epoll_wait, and the loops and
// the rest of the proxy share GOMAXPROCS fairly.
//
// Only sessions on shared upstream connections live in a loop. Handling a
// command returns a step (step.go) that the loop carries out (carry): a
// command that needs a dedicated connection (MULTI, BLPOP, SUBSCRIBE...)
// moves its session onto a goroutine of its own before anything is done
// for it (stepOwnConn), because the dial and the waits that follow would
// stall every other client of the loop. Commands that must follow every
// earlier reply (settle, switchFirst) wait, kept by the session, until the
// loop has read those replies (stepSettle): waiting for them here would
// wait for the loop itself. What else could block — a dial of a shared connection, fetching
// Valkey's command table or a movable command's keys for the lock rules (the
// side connection) — is done off the loop while the client waits alone
// (stepOffLoop): one client's dial to a slow or unreachable Valkey holds no
// other client up.
type loop struct {
	p    *Proxy
	epfd int
	evfd int      // eventfd: other goroutines wake the loop through it
	file *os.File // epfd, as Go's poller sees it
	rc   syscall.RawConn

	// corked: the sessions this round's upstream replies were queued for
	// (in front of a cluster), written once every upstream connection
	// ready in the round is read (only the loop touches it).
	corked []upstream.Touched

	mu        sync.Mutex
	byFd      map[int32]*session
	upFd      map[int32]*upstream.Conn // shared upstream connections this loop reads
	closing   []*upstream.Conn         // failed ones, for the loop to close
	woken     []*session               // sessions to read again: their replies caught up
	signalled bool                     // an eventfd write is pending
	wakeAll   bool                     // read every session again (shutdown)

	// The loop goroutine's own.
	evs     []unix.EpollEvent
	ready   []*session
	hup     []bool // per ready session: the socket hung up or failed
	ups     []*upstream.Conn
	toClose []*upstream.Conn
	resumed []*session
	dirty   []*upstream.Conn // connections with commands queued this round
	pollFn  func(fd uintptr) bool
	waitN   int
	waitErr error
	done    chan struct{}
}

// wakeMark is the epoll data of the eventfd; client descriptors are >= 0.
const wakeMark = -1

// maxEvents is how many ready clients one round takes at most; the rest are
// taken by the next round (epoll is level-triggered).
const maxEvents = 256

func newLoop(p *Proxy) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	fail := func(err error) (*loop, error) {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeMark}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		return fail(fmt.Errorf("epoll_ctl: %w", err))
	}
	// Non-blocking, so that os.NewFile hands it to Go's poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		return fail(err)
	}
	file := os.NewFile(uintptr(epfd), "lockproxy-epoll")
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		unix.Close(evfd)
		return nil, err
	}
	l := &loop{
		p: p, epfd: epfd, evfd: evfd, file: file, rc: rc,
		byFd: map[int32]*session{},
		upFd: map[int32]*upstream.Conn{},
		evs:  make([]unix.EpollEvent, maxEvents),
		done: make(chan struct{}),
	}
	l.pollFn = l.poll
	go l.run()
	return l, nil
}

// add hands s to the loop. It reports false when s can not be served by a
// loop (no plain socket: TLS): it then runs on a goroutine of its own.
func (l *loop) add(s *session) bool {
	if s.raw == nil {
		return false
	}
	fd := -1
	if err := s.raw.Control(func(f uintptr) { fd = int(f) }); err != nil || fd < 0 {
		return false
	}
	s.fd, s.home, s.lp = fd, l, l
	s.src = fdReader{fd: fd, o: s.p.ops}
	s.rd.SetSource(&s.src)
	l.mu.Lock()
	l.byFd[int32(fd)] = s
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.byFd, int32(fd))
		l.mu.Unlock()
		s.home, s.lp = nil, nil
		return false
	}
	if l.p.shuttingDown.Load() {
		// Shutdown began after the client was accepted and may have woken
		// the loop before s was in it: s ends once it has handled what it
		// sent.
		l.resume(s)
	}
	return true
}

// addUp makes the loop read the shared upstream connection c: its replies
// are then handed out in the same rounds that read the clients, with no
// goroutine hand-off between the two. It reports false when c must have a
// reader goroutine instead.
func (l *loop) addUp(c *upstream.Conn) bool {
	// Set up before the loop can see c: it may read c at once.
	fd, ok := c.Attach(l, readFd)
	if !ok {
		return false
	}
	l.mu.Lock()
	l.upFd[int32(fd)] = c
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.upFd, int32(fd))
		l.mu.Unlock()
		c.CancelAttach()
		return false
	}
	return true
}

// Detach asks the loop to stop reading the failed connection c and close
// it. Called from any goroutine, once (upstream.Conn.Fail).
func (l *loop) Detach(c *upstream.Conn) {
	l.mu.Lock()
	l.closing = append(l.closing, c)
	l.signalLocked()
	l.mu.Unlock()
}

// closeUps closes the connections detached from the loop.
func (l *loop) closeUps(cs []*upstream.Conn) {
	for _, c := range cs {
		l.mu.Lock()
		delete(l.upFd, int32(c.FD()))
		l.mu.Unlock()
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.FD(), nil)
		c.CloseSocket()
	}
}

// readUp reads the upstream connection c once and hands out its replies. A
// panic there (in a reply hook) fails c, not the loop.
// CorkList is where dispatch puts the sessions it corked replies for, when
// this loop reads the connection: a client whose replies come from several
// nodes' connections in one round gets one write for all of them.
func (l *loop) CorkList() *[]upstream.Touched { return &l.corked }

func (l *loop) readUp(c *upstream.Conn) {
	defer func() {
		if r := recover(); r != nil {
			l.p.log.Error("closing an upstream connection after an internal error",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.Fail(fmt.Errorf("internal error: %v", r))
		}
	}()
	c.ReadReady()
}

// remove takes s out of the loop; the loop never touches s's descriptor
// again, so whoever serves s next may close it.
func (l *loop) remove(s *session) {
	l.mu.Lock()
	delete(l.byFd, int32(s.fd))
	l.mu.Unlock()
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
	s.lp = nil
}

// reading turns reading s on or off (off while it waits for its replies to
// catch up: its client is then held back by TCP, as a goroutine would be).
func (l *loop) reading(s *session, on bool) {
	s.readOff = !on
	ev := unix.EpollEvent{Fd: int32(s.fd)}
	if on {
		ev.Events = unix.EPOLLIN | unix.EPOLLRDHUP
	}
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, s.fd, &ev)
}

// resume asks the loop to read s again. Called from upstream readers.
func (l *loop) resume(s *session) {
	l.mu.Lock()
	l.woken = append(l.woken, s)
	l.signalLocked()
	l.mu.Unlock()
}

// wake makes the loop read every session again: at shutdown, each then ends
// once it has handled what it already received.
func (l *loop) wake() {
	l.mu.Lock()
	l.wakeAll = true
	l.signalLocked()
	l.mu.Unlock()
}

func (l *loop) signalLocked() {
	if l.signalled {
		return
	}
	l.signalled = true
	var one = [8]byte{1}
	_, _ = unix.Write(l.evfd, one[:])
}

// Queued notes that this round queued commands on c.
func (l *loop) Queued(c *upstream.Conn) {
	for _, d := range l.dirty {
		if d == c {
			return
		}
	}
	l.dirty = append(l.dirty, c)
}

// close stops the loop once every session has left it.
func (l *loop) close() {
	l.file.Close()
	<-l.done
	unix.Close(l.evfd)
}

func (l *loop) run() {
	defer close(l.done)
	idle := l.p.opts.ClientIdleTimeout.D()
	sweepEvery := min(max(idle/4, 10*time.Millisecond), time.Second)
	if idle > 0 {
		_ = l.file.SetReadDeadline(time.Now().Add(sweepEvery))
	}
	for {
		n, err := l.wait()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				l.sweep(idle)
				_ = l.file.SetReadDeadline(time.Now().Add(sweepEvery))
				continue
			}
			// Closed: every session has left, and the pools have
			// failed their connections; any other still here fails
			// now, so nothing waits on a reader that is gone.
			l.mu.Lock()
			var live []*upstream.Conn
			for _, c := range l.upFd {
				live = append(live, c)
			}
			l.mu.Unlock()
			for _, c := range live {
				c.Fail(upstream.ErrClosed)
			}
			l.mu.Lock()
			cs := l.closing
			l.closing = nil
			l.mu.Unlock()
			l.closeUps(cs)
			return
		}
		l.round(n)
	}
}

// wait returns how many events are in l.evs, parking in Go's poller while
// there are none. epoll_wait is asked with a zero timeout: it never blocks
// the thread. With busy_poll, it asks again and again for that long before
// parking (inside Read, where the descriptor cannot be closed under it).
func (l *loop) wait() (int, error) {
	l.waitN, l.waitErr = 0, nil
	err := l.rc.Read(l.pollFn)
	if err == nil {
		err = l.waitErr
	}
	return l.waitN, err
}

// poll is wait's function for RawConn.Read, bound once (l.pollFn): a
// closure made per round would escape and be allocated every round. It
// reports true when it has events (or an error) in l.waitN (l.waitErr),
// false to park until the epoll descriptor is readable.
func (l *loop) poll(fd uintptr) bool {
	spin := l.p.opts.BusyPoll.D()
	var until time.Time
	for {
		m, errno := epollPoll(int(fd), l.evs)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			l.waitErr = errno
			return true
		}
		if m > 0 {
			l.waitN = m
			return true
		}
		if spin <= 0 {
			return false
		}
		now := time.Now()
		if until.IsZero() {
			until = now.Add(spin)
		} else if now.After(until) {
			return false
		}
	}
}

func (l *loop) round(n int) {
	l.ready, l.hup, l.ups = l.ready[:0], l.hup[:0], l.ups[:0]
	woke, all := false, false
	l.mu.Lock()
	for _, ev := range l.evs[:n] {
		if ev.Fd == wakeMark {
			woke = true
			continue
		}
		if s := l.byFd[ev.Fd]; s != nil {
			l.ready = append(l.ready, s)
			l.hup = append(l.hup, ev.Events&(unix.EPOLLHUP|unix.EPOLLERR) != 0)
		} else if c := l.upFd[ev.Fd]; c != nil {
			l.ups = append(l.ups, c)
		}
	}
	if woke {
		var b [8]byte
		_, _ = unix.Read(l.evfd, b[:])
		l.signalled = false
		l.toClose = append(l.toClose[:0], l.closing...)
		clear(l.closing)
		l.closing = l.closing[:0]
		l.resumed = append(l.resumed[:0], l.woken...)
		clear(l.woken)
		l.woken = l.woken[:0]
		if all = l.wakeAll; all {
			l.wakeAll = false
			for _, s := range l.byFd {
				l.resumed = append(l.resumed, s)
			}
		}
	}
	l.mu.Unlock()
	// Replies first: they may let paused clients read on, and the
	// commands read below then go out behind the replies' piggy-backed
	// writes.
	for _, c := range l.ups {
		if !c.Dead() {
			l.readUp(c)
		}
	}
	clear(l.ups)
	upstream.UncorkAll(&l.corked)
	var now time.Time
	if l.p.opts.ClientIdleTimeout.D() > 0 {
		now = time.Now()
	}
	for i, s := range l.ready {
		if s.lp != l {
			continue
		}
		if l.hup[i] && s.paused.Load() {
			// Paused, its reading is off, but epoll reports a hang-up
			// regardless, round after round: the client is gone (or was
			// cut off), so the replies it is owed have nowhere to go.
			s.end(false)
			continue
		}
		s.src.armed = true
		s.lastRead = now
		s.pump()
	}
	for _, s := range l.resumed {
		if s.lp != l {
			continue // ended or moved to a goroutine meanwhile
		}
		if !s.paused.Load() && s.readOff {
			// Not waitLE: a job that ended before the loop went on
			// has the command handled at once, and that may have
			// waited (waitDrain) and reset waitLE already.
			s.waitLE.Store(-1)
			l.reading(s, true)
		}
		s.pump()
	}
	clear(l.resumed)
	l.resumed = l.resumed[:0]
	clear(l.ready)
	if len(l.toClose) > 0 {
		l.closeUps(l.toClose)
		clear(l.toClose)
		l.toClose = l.toClose[:0]
	}
	l.uncork()
}

// uncork writes what this round queued on each upstream connection.
func (l *loop) uncork() {
	for _, c := range l.dirty {
		c.Uncork()
	}
	clear(l.dirty)
	l.dirty = l.dirty[:0]
}

// sweep ends the sessions that sent nothing for idle while owed no reply, as
// client_idle_timeout asks.
func (l *loop) sweep(idle time.Duration) {
	now := time.Now()
	var gone []*session
	l.mu.Lock()
	for _, s := range l.byFd {
		if s.inflight.Load() == 0 && !s.paused.Load() && now.Sub(s.lastRead) > idle {
			gone = append(gone, s)
		}
	}
	l.mu.Unlock()
	for _, s := range gone {
		if s.lp == l {
			s.end(false)
		}
	}
}

// fdReader reads a loop session's socket: once per readiness the loop saw,
// never waiting.
type fdReader struct {
	fd    int
	armed bool
	o     *ops
}

func (f *fdReader) Read(b []byte) (int, error) {
	if !f.armed || len(b) == 0 {
		return 0, upstream.ErrWouldBlock
	}
	f.armed = false
	n, err := readFd(f.fd, b)
	if n > 0 {
		f.o.traffic.In.Add(int64(n))
	}
	return n, err
}

// readFd reads a non-blocking socket once: EAGAIN is upstream.ErrWouldBlock, end of
// stream io.EOF.
func readFd(fd int, b []byte) (int, error) {
	for {
		n, errno := sysRead(fd, b)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return 0, upstream.ErrWouldBlock
		case errno != 0:
			return 0, errno
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
