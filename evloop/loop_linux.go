package evloop

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/lockproxy/lockproxy/upstream"
	"golang.org/x/sys/unix"
)

// A Loop serves many clients from one goroutine. With a goroutine per
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
// A client is served through its Client: the loop calls Pump when the
// client's socket is readable (its Member reads it once) or when it was
// resumed, and never waits for anything. What a client's command needs that
// could block — a dial, a wait for its earlier replies, a connection of its
// own — its Pump arranges by pausing the client (Reading off, Resume when
// done) or by leaving the loop (Remove).
type Loop struct {
	cfg  Config
	epfd int
	evfd int      // eventfd: other goroutines wake the loop through it
	file *os.File // epfd, as Go's poller sees it
	rc   syscall.RawConn

	// corked: the sinks this round's upstream replies were queued for
	// (in front of a cluster), written once every upstream connection
	// ready in the round is read (only the loop touches it).
	corked []upstream.Touched

	mu        sync.Mutex
	byFd      map[int32]*Member
	upFd      map[int32]*upstream.Conn // shared upstream connections this loop reads
	closing   []*upstream.Conn         // failed ones, for the loop to close
	woken     []*Member                // clients to read again: their replies caught up
	signalled bool                     // an eventfd write is pending
	wakeAll   bool                     // read every client again (shutdown)

	// The loop goroutine's own.
	evs     []unix.EpollEvent
	ready   []*Member
	hup     []bool // per ready client: the socket hung up or failed
	ups     []*upstream.Conn
	toClose []*upstream.Conn
	resumed []*Member
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

// New starts a loop.
func New(cfg Config) (*Loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	fail := func(err error) (*Loop, error) {
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
	l := &Loop{
		cfg: cfg, epfd: epfd, evfd: evfd, file: file, rc: rc,
		byFd: map[int32]*Member{},
		upFd: map[int32]*upstream.Conn{},
		evs:  make([]unix.EpollEvent, maxEvents),
		done: make(chan struct{}),
	}
	l.pollFn = l.poll
	go l.run()
	return l, nil
}

// Add makes the loop serve the client c, whose socket raw is, with m as
// its record: m then reads the socket (Member.Read), once per readiness the
// loop saw. Whatever c's Pump needs set up must be before Add: the loop may
// call it at once. It reports false when c can not be served by a loop (no
// plain socket: TLS); it then runs on a goroutine of its own.
func (l *Loop) Add(m *Member, raw syscall.RawConn, c Client) bool {
	if raw == nil {
		return false
	}
	fd := -1
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil || fd < 0 {
		return false
	}
	*m = Member{c: c, fd: fd, l: l, in: l.cfg.BytesIn, lastRead: time.Now()}
	l.mu.Lock()
	l.byFd[int32(fd)] = m
	l.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.mu.Lock()
		delete(l.byFd, int32(fd))
		l.mu.Unlock()
		m.l = nil
		return false
	}
	return true
}

// AddUp makes the loop read the shared upstream connection c: its replies
// are then handed out in the same rounds that read the clients, with no
// goroutine hand-off between the two. It reports false when c must have a
// reader goroutine instead.
func (l *Loop) AddUp(c *upstream.Conn) bool {
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
func (l *Loop) Detach(c *upstream.Conn) {
	l.mu.Lock()
	l.closing = append(l.closing, c)
	l.signalLocked()
	l.mu.Unlock()
}

// closeUps closes the connections detached from the loop.
func (l *Loop) closeUps(cs []*upstream.Conn) {
	for _, c := range cs {
		l.mu.Lock()
		delete(l.upFd, int32(c.FD()))
		l.mu.Unlock()
		_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.FD(), nil)
		c.CloseSocket()
	}
}

// CorkList is where dispatch puts the sinks it corked replies for, when
// this loop reads the connection: a client whose replies come from several
// nodes' connections in one round gets one write for all of them.
func (l *Loop) CorkList() *[]upstream.Touched { return &l.corked }

// readUp reads the upstream connection c once and hands out its replies. A
// panic there (in a reply hook) fails c, not the loop.
func (l *Loop) readUp(c *upstream.Conn) {
	defer func() {
		if r := recover(); r != nil {
			l.cfg.Log.Error("closing an upstream connection after an internal error",
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.Fail(fmt.Errorf("internal error: %v", r))
		}
	}()
	c.ReadReady()
}

// Remove takes m's client out of the loop; the loop never touches its
// descriptor again, so whoever serves the client next may close it. Only
// the loop's goroutine calls it (from the client's Pump or Drop).
func (l *Loop) Remove(m *Member) {
	l.mu.Lock()
	delete(l.byFd, int32(m.fd))
	l.mu.Unlock()
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, m.fd, nil)
	m.l = nil
}

// Reading turns reading m's client on or off (off while it waits for its
// replies to catch up: its client is then held back by TCP, as a goroutine
// would be). Only the loop's goroutine calls it.
func (l *Loop) Reading(m *Member, on bool) {
	m.readOff = !on
	ev := unix.EpollEvent{Fd: int32(m.fd)}
	if on {
		ev.Events = unix.EPOLLIN | unix.EPOLLRDHUP
	}
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, m.fd, &ev)
}

// Resume asks the loop to pump m's client again, reading it again if its
// reading was off and it is no longer paused. Called from any goroutine
// (upstream readers, a job done off the loop); nothing happens if the
// client has left the loop meanwhile.
func (l *Loop) Resume(m *Member) {
	l.mu.Lock()
	l.woken = append(l.woken, m)
	l.signalLocked()
	l.mu.Unlock()
}

// Wake makes the loop pump every client again: at shutdown, each then ends
// once it has handled what it already received.
func (l *Loop) Wake() {
	l.mu.Lock()
	l.wakeAll = true
	l.signalLocked()
	l.mu.Unlock()
}

func (l *Loop) signalLocked() {
	if l.signalled {
		return
	}
	l.signalled = true
	var one = [8]byte{1}
	_, _ = unix.Write(l.evfd, one[:])
}

// Queued notes that this round queued commands on c.
func (l *Loop) Queued(c *upstream.Conn) {
	for _, d := range l.dirty {
		if d == c {
			return
		}
	}
	l.dirty = append(l.dirty, c)
}

// Close stops the loop once every client has left it, and fails the
// upstream connections it still reads.
func (l *Loop) Close() {
	l.file.Close()
	<-l.done
	unix.Close(l.evfd)
}

func (l *Loop) run() {
	defer close(l.done)
	idle := l.cfg.Idle
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
			// Closed: every client has left, and the pools have
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
// the thread. With BusyPoll, it asks again and again for that long before
// parking (inside Read, where the descriptor cannot be closed under it).
func (l *Loop) wait() (int, error) {
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
func (l *Loop) poll(fd uintptr) bool {
	spin := l.cfg.BusyPoll
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

func (l *Loop) round(n int) {
	l.ready, l.hup, l.ups = l.ready[:0], l.hup[:0], l.ups[:0]
	woke, all := false, false
	l.mu.Lock()
	for _, ev := range l.evs[:n] {
		if ev.Fd == wakeMark {
			woke = true
			continue
		}
		if m := l.byFd[ev.Fd]; m != nil {
			l.ready = append(l.ready, m)
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
			for _, m := range l.byFd {
				l.resumed = append(l.resumed, m)
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
	if l.cfg.Idle > 0 {
		now = time.Now()
	}
	for i, m := range l.ready {
		if m.l != l {
			continue
		}
		if l.hup[i] && m.c.Paused() {
			// Paused, its reading is off, but epoll reports a hang-up
			// regardless, round after round: the client is gone (or was
			// cut off), so the replies it is owed have nowhere to go.
			m.c.Drop()
			continue
		}
		m.armed = true
		m.lastRead = now
		m.c.Pump()
	}
	for _, m := range l.resumed {
		if m.l != l {
			continue // ended or moved to a goroutine meanwhile
		}
		if m.readOff && !m.c.Paused() {
			m.c.ReadingOn()
			l.Reading(m, true)
		}
		m.c.Pump()
	}
	clear(l.resumed)
	l.resumed = l.resumed[:0]
	clear(l.ready)
	if len(l.toClose) > 0 {
		l.closeUps(l.toClose)
		clear(l.toClose)
		l.toClose = l.toClose[:0]
	}
	l.Uncork()
}

// Uncork writes what this round queued on each upstream connection. The
// loop does at the end of each round; a client's Pump does before it waits
// for replies to what it queued (they cannot come before).
func (l *Loop) Uncork() {
	for _, c := range l.dirty {
		c.Uncork()
	}
	clear(l.dirty)
	l.dirty = l.dirty[:0]
}

// sweep drops the clients that sent nothing for idle while owed no reply,
// as client_idle_timeout asks.
func (l *Loop) sweep(idle time.Duration) {
	now := time.Now()
	var gone []*Member
	l.mu.Lock()
	for _, m := range l.byFd {
		if now.Sub(m.lastRead) > idle && m.c.Idle() {
			gone = append(gone, m)
		}
	}
	l.mu.Unlock()
	for _, m := range gone {
		if m.l == l {
			m.c.Drop()
		}
	}
}
