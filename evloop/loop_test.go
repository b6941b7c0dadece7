//go:build linux

package evloop

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/lockproxy/lockproxy/upstream"
	"golang.org/x/sys/unix"
)

// testClient is a Client over one end of a socketpair; the test holds the
// other end (peer). Each Pump reads once, with a buffer of size bytes, and
// reports what it read on pumps; hook, when set, runs on the loop after.
type testClient struct {
	l       *Loop
	m       Member
	raw     syscall.RawConn
	peer    net.Conn
	size    int
	hook    func(c *testClient, n int)
	pumps   chan string
	drops   chan struct{}
	paused  atomic.Bool
	busy    atomic.Bool // owed replies: not Idle
	readsOn atomic.Int32
	buf     []byte
}

func (c *testClient) Pump() {
	n, err := c.m.Read(c.buf[:c.size])
	if err != nil && !errors.Is(err, upstream.ErrWouldBlock) {
		n = 0
	}
	got := string(c.buf[:n])
	if n > 0 {
		// Once per readiness: the socket is not read again in this Pump.
		if _, err := c.m.Read(c.buf[:c.size]); !errors.Is(err, upstream.ErrWouldBlock) {
			got += " (and a second read in the same pump)"
		}
	}
	if c.hook != nil {
		c.hook(c, n)
	}
	c.pumps <- got
}

func (c *testClient) Paused() bool { return c.paused.Load() }
func (c *testClient) ReadingOn()   { c.readsOn.Add(1) }
func (c *testClient) Idle() bool   { return !c.busy.Load() && !c.paused.Load() }
func (c *testClient) Drop() {
	c.l.Remove(&c.m)
	c.drops <- struct{}{}
}

// newClient makes a socketpair, and a testClient over one end with hook,
// added to l.
func newClient(t *testing.T, l *Loop, size int, hook func(c *testClient, n int)) *testClient {
	t.Helper()
	raw, peer := socketPair(t)
	c := &testClient{l: l, raw: raw, peer: peer, size: size, hook: hook, buf: make([]byte, 4096),
		pumps: make(chan string, 1024), drops: make(chan struct{}, 16)}
	if !l.Add(&c.m, raw, c) {
		t.Fatal("a socketpair's end was not added")
	}
	return c
}

// socketPair returns the raw socket of one end of a socketpair, for a loop
// to serve, and the other end; both are closed when t ends.
func socketPair(t *testing.T) (syscall.RawConn, net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	served, peer := fileConn(t, fds[0]), fileConn(t, fds[1])
	t.Cleanup(func() { served.Close(); peer.Close() })
	raw, err := served.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return raw, peer
}

func fileConn(t *testing.T, fd int) net.Conn {
	t.Helper()
	f := os.NewFile(uintptr(fd), "socketpair")
	defer f.Close()
	nc, err := net.FileConn(f) // a dup, non-blocking, in Go's poller
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

func newLoop(t *testing.T, cfg Config) *Loop {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (c *testClient) send(t *testing.T, s string) {
	t.Helper()
	if _, err := c.peer.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// want receives the next pump and checks what it read.
func (c *testClient) want(t *testing.T, read string) {
	t.Helper()
	if got := <-c.pumps; got != read {
		t.Fatalf("pump read %q, want %q", got, read)
	}
}

// TestLoopReadsOncePerReadiness: a readable client is pumped, and its
// Member reads the socket once per readiness the loop saw; what is left is
// read in the rounds that follow (epoll is level-triggered). The bytes read
// are counted in BytesIn.
func TestLoopReadsOncePerReadiness(t *testing.T) {
	var in atomic.Int64
	l := newLoop(t, Config{BytesIn: &in})
	defer l.Close()
	c := newClient(t, l, 1, nil)
	c.send(t, "abc")
	c.want(t, "a")
	c.want(t, "b")
	c.want(t, "c")
	l.Resume(&c.m)
	c.want(t, "") // resumed, not readable: Read has nothing
	if n := in.Load(); n != 3 {
		t.Errorf("BytesIn = %d, want 3", n)
	}
}

// TestLoopReadingOffUntilResumed: a client whose reading is off is not
// read; resumed while still paused it is pumped but not read, and resumed
// once no longer paused its reading is turned on again (ReadingOn told
// first) and what waited is read.
func TestLoopReadingOffUntilResumed(t *testing.T) {
	l := newLoop(t, Config{})
	defer l.Close()
	c := newClient(t, l, 64, func(c *testClient, n int) {
		if n > 0 && string(c.buf[:n]) == "x" {
			c.paused.Store(true)
			c.l.Reading(&c.m, false)
		}
	})
	c.send(t, "x")
	c.want(t, "x")
	c.send(t, "y") // reading is off: not read
	l.Resume(&c.m)
	c.want(t, "") // pumped, still paused: not read, reading stays off
	if n := c.readsOn.Load(); n != 0 {
		t.Fatalf("ReadingOn told %d times while paused", n)
	}
	c.paused.Store(false)
	l.Resume(&c.m)
	c.want(t, "") // the round of the resume: reading on, nothing armed yet
	if n := c.readsOn.Load(); n != 1 {
		t.Fatalf("ReadingOn told %d times, want 1", n)
	}
	c.want(t, "y")
	l.Resume(&c.m)
	c.want(t, "")
	if n := c.readsOn.Load(); n != 1 {
		t.Fatalf("ReadingOn told %d times with reading on already, want 1", n)
	}
}

// TestLoopDropsPausedHungUp: a paused client (reading off) whose peer hangs
// up is dropped, and once it has left the loop it is never pumped again,
// not even when resumed.
func TestLoopDropsPausedHungUp(t *testing.T) {
	l := newLoop(t, Config{})
	defer l.Close()
	a := newClient(t, l, 64, func(c *testClient, n int) {
		if n > 0 {
			c.paused.Store(true)
			c.l.Reading(&c.m, false)
		}
	})
	b := newClient(t, l, 64, nil)
	a.send(t, "x")
	a.want(t, "x")
	a.peer.Close()
	<-a.drops
	l.Resume(&a.m)
	l.Resume(&b.m)
	b.want(t, "") // the round after a's resume has run
	select {
	case got := <-a.pumps:
		t.Fatalf("a client that left the loop was pumped (read %q)", got)
	default:
	}
}

// TestLoopIdleSweep: with Idle set, a client that is Idle and sent nothing
// for that long is dropped; one owed replies is not.
func TestLoopIdleSweep(t *testing.T) {
	l := newLoop(t, Config{Idle: 1}) // the sweep runs every 10ms
	defer l.Close()
	idle, busy := newClient(t, l, 64, nil), newClient(t, l, 64, nil)
	busy.busy.Store(true)
	<-idle.drops
	// The sweep that dropped idle has ended once a later round runs.
	l.Resume(&busy.m)
	busy.want(t, "")
	select {
	case <-busy.drops:
		t.Fatal("a client owed replies was dropped as idle")
	default:
	}
	busy.busy.Store(false)
	<-busy.drops
}

// TestLoopWake: Wake pumps every client of the loop.
func TestLoopWake(t *testing.T) {
	l := newLoop(t, Config{})
	defer l.Close()
	cs := []*testClient{newClient(t, l, 64, nil), newClient(t, l, 64, nil), newClient(t, l, 64, nil)}
	l.Wake()
	for _, c := range cs {
		c.want(t, "")
	}
	for _, c := range cs {
		l.Resume(&c.m)
		c.want(t, "")
	}
}

// TestLoopPumpNoAlloc: serving a client's readiness — the round, the pump,
// the Member's read — allocates nothing once the loop's slices have grown.
func TestLoopPumpNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l := newLoop(t, Config{Idle: 1 << 40}) // the idle clock read per round too
	defer l.Close()
	raw, peer := socketPair(t)
	c := &noAllocClient{buf: make([]byte, 64), done: make(chan struct{}, 1)}
	if !l.Add(&c.m, raw, c) {
		t.Fatal("a socketpair's end was not added")
	}
	msg := []byte("x")
	round := func() {
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		<-c.done
	}
	round()
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Errorf("a round serving one readable client allocates %v times, want 0", n)
	}
}

// noAllocClient reads what its socket has and signals, allocating nothing.
type noAllocClient struct {
	m    Member
	buf  []byte
	done chan struct{}
}

func (n *noAllocClient) Pump() {
	if k, _ := n.m.Read(n.buf); k > 0 {
		n.done <- struct{}{}
	}
}
func (n *noAllocClient) Paused() bool { return false }
func (n *noAllocClient) ReadingOn()   {}
func (n *noAllocClient) Idle() bool   { return false }
func (n *noAllocClient) Drop()        {}
