package e2e_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// gate is a TCP relay in front of Valkey that can hold new connections:
// while it holds, a connection is accepted but relays nothing until
// release, as from a Valkey slow to answer a new connection (overloaded,
// or across a congested network).
type gate struct {
	t        *testing.T
	ln       net.Listener
	target   string
	mu       sync.Mutex
	held     chan struct{} // closed by release; nil while not holding
	accepted chan struct{} // a token per connection accepted while holding
	conns    []net.Conn
}

func newGate(t *testing.T, target string) *gate {
	g := &gate{t: t, ln: listen(t), target: target, accepted: make(chan struct{}, 64)}
	go g.serve()
	t.Cleanup(func() {
		g.ln.Close()
		g.release()
		g.mu.Lock()
		for _, c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
	})
	return g
}

func (g *gate) addr() string { return g.ln.Addr().String() }

func (g *gate) hold() {
	g.mu.Lock()
	g.held = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) release() {
	g.mu.Lock()
	if g.held != nil {
		close(g.held)
		g.held = nil
	}
	g.mu.Unlock()
}

func (g *gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		held := g.held
		g.conns = append(g.conns, c)
		g.mu.Unlock()
		go func() {
			if held != nil {
				g.accepted <- struct{}{}
				<-held
			}
			u, err := net.Dial("tcp", g.target)
			if err != nil {
				c.Close()
				return
			}
			g.mu.Lock()
			g.conns = append(g.conns, u)
			g.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			_, _ = io.Copy(c, u)
			c.Close()
		}()
	}
}

// waitAccepted waits for the proxy to open a connection the gate holds.
func (g *gate) waitAccepted(what string) {
	g.t.Helper()
	select {
	case <-g.accepted:
	case <-time.After(10 * time.Second):
		g.t.Fatalf("%s: the proxy opened no upstream connection", what)
	}
}

// TestSlowDialStallsOnlyItsClient: a client whose command needs a new
// shared upstream connection waits for that dial, and only it: clients with
// a connection already, and commands the proxy answers itself, go on.
// Under the event-loop engine the dial is made off the loop (offLoop);
// before that, one client's SELECT of a new database could hold every
// client of its loop for up to dial_timeout.
func TestSlowDialStallsOnlyItsClient(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		srv := valkeytest.Start(t)
		g := newGate(t, srv.Addr)
		e := &env{t: t, srv: srv, upstream: g.addr()}
		o.Upstream.DialTimeout = config.Duration(30 * time.Second)
		e.startProxy(o)

		b := dialRaw(t, e.addr)
		eq(t, b.do("SET", "k", "v"), "+OK\r\n") // b's pool slot is connected

		g.hold()
		a := dialRaw(t, e.addr)
		a.send(string(redisCmd("SELECT", "5"))) // a pool nobody dialled yet
		g.waitAccepted("SELECT 5")

		// While a's dial hangs: b's command on its live connection, and a
		// new client's admin command, are answered.
		b.send(string(redisCmd("GET", "k")))
		if got, err := b.readErr(10 * time.Second); err != nil || got != "$1\r\nv\r\n" {
			t.Fatalf("GET on a live connection while another client's dial hangs: %q, %v", got, err)
		}
		c := dialRaw(t, e.addr)
		c.send(string(redisCmd("LOCKPROXY", "HELP")))
		if got, err := c.readErr(10 * time.Second); err != nil || got[0] != '*' {
			t.Fatalf("LOCKPROXY HELP while another client's dial hangs: %q, %v", got, err)
		}
		if got, err := a.readErr(100 * time.Millisecond); err == nil {
			t.Fatalf("SELECT 5 answered %q before its connection was let through", got)
		}

		g.release()
		eq(t, a.read(), "+OK\r\n")
		eq(t, a.do("GET", "k"), "$-1\r\n") // a is on database 5
		eq(t, b.do("GET", "k"), "$1\r\nv\r\n")
	})
}

// TestMovableKeysOntoLock: a write whose keys only Valkey can name (SORT ...
// STORE) is checked against the lock rules like any other: the proxy asks
// COMMAND GETKEYSANDFLAGS (off the event loop), then refuses storing onto a
// held lock and forwards the rest, pipelined behind other commands in order.
func TestMovableKeysOntoLock(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, rulesOptions(t, rule("rewrite"), func(x *proxy.Options) { x.EventLoops, x.BusyPoll = o.EventLoops, o.BusyPoll }))
		holder, other := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, holder.do("SET", "m:lock", "tok", "NX", "PX", "60000"), "+OK\r\n")
		eq(t, other.do("RPUSH", "src", "3", "1", "2"), ":3\r\n")

		other.send(string(redisCmd("SORT", "src", "STORE", "m:lock")) +
			string(redisCmd("SORT", "src", "STORE", "plain")) +
			string(redisCmd("SORT", "src")) +
			string(redisCmd("LRANGE", "plain", "0", "-1")))
		got := other.read()
		if !strings.HasPrefix(got, "-LOCKED lockproxy refused SORT") || !strings.Contains(got, "m:lock") {
			t.Fatalf("SORT ... STORE onto a held lock: got %q, want a LOCKED refusal naming the key", got)
		}
		eq(t, other.read(), ":3\r\n")
		eq(t, other.read(), "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n")
		eq(t, other.read(), "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n")
		if v, err := e.direct().Get(ctx, "m:lock").Result(); err != nil || v != "tok" {
			t.Fatalf("the lock after a refused SORT ... STORE: %q, %v; want the holder's token", v, err)
		}
		if !hasEvent(e, proxy.OutcomeRefused, "m:lock") {
			t.Errorf("no refused event recorded for m:lock: %+v", e.p.Events(10))
		}
	})
}
