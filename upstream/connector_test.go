package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// nodes is a cluster with one node, for a Target: AnyNode names it (or
// fails with err), RefreshSoon is counted.
type nodes struct {
	addr      string
	err       error
	refreshes int
}

func (n *nodes) AnyNode() (string, error) { return n.addr, n.err }
func (n *nodes) RefreshSoon()             { n.refreshes++ }

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// connector is a Connector to addr as the proxy fills it in, with the
// handshake's scripts given, counting what Learn and Attach are told, and
// logging into log.
func connector(addr string, log *bytes.Buffer, learnt, attached *int) *Connector {
	var wg sync.WaitGroup
	d := &Dialer{Timeout: 5 * time.Second, TLS: func() *tls.Config { return nil }, Alive: func() bool { return true }}
	return &Connector{
		Target: Target{Addr: addr},
		Dialer: d,
		Host: &Host{WG: &wg, Log: slog.New(slog.NewTextHandler(log, nil)), ReplyTimeout: 5 * time.Second,
			RoundTrip: func([]Pend) {}, Failed: func(string, error, int) {},
			LostText: func(string, error, bool) string { return "UPSTREAM lost" }},
		Health: Health{Log: slog.New(slog.NewTextHandler(log, nil))},
		Wait:   5 * time.Second,
		Handshake: func(nc net.Conn, st State) error {
			return Handshake(nc, st, []string{"return 1"}, func(net.Conn, int) func() { return func() {} })
		},
		Learn:  func(net.Conn, State) error { *learnt++; return nil },
		Attach: func(*Conn) { *attached++ },
	}
}

// A Connector connects to where its Target says, makes the connection
// equal to the State (login, database), learns on it unless bare, and
// starts it, handing a shared one to the event loop; Valkey's refusal of
// the login is a NodeError around its reply, a dial nowhere makes the
// Target ask again.
func TestConnectorConnect(t *testing.T) {
	srv := valkeytest.Start(t, "requirepass s3cret")
	var log bytes.Buffer
	learnt, attached := 0, 0
	k := connector(srv.Addr, &log, &learnt, &attached)

	id := new(int64)
	nc, addr, err := k.Connect(State{Proto: 2, DB: 3, Password: "s3cret", Auth: true, ClientID: id})
	if err != nil {
		t.Fatal(err)
	}
	if addr != srv.Addr || learnt != 1 || *id == 0 {
		t.Errorf("connected to %s (want %s), learnt %d times (want 1), client id %d", addr, srv.Addr, learnt, *id)
	}
	// The connection is logged in and in database 3.
	if _, err := nc.Write([]byte("*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n")); err != nil {
		t.Fatal(err)
	}
	if b, n, err := ReadReply(nc, nil); err != nil || !strings.Contains(string(b[:n]), " db=3 ") {
		t.Errorf("CLIENT INFO on the new connection: %q, %v", b, err)
	}
	nc.Close()

	if _, _, err := k.Connect(State{Proto: 2, Bare: true, Password: "s3cret", Auth: true}); err != nil || learnt != 1 {
		t.Errorf("bare: %v, learnt %d times (want still 1)", err, learnt)
	}

	_, _, err = k.Connect(State{Proto: 2, Password: "wrong", Auth: true})
	var ne *NodeError
	var re *ReplyError
	if !errors.As(err, &ne) || ne.Addr != srv.Addr || !errors.As(err, &re) || !strings.HasPrefix(re.Msg, "WRONGPASS") {
		t.Fatalf("wrong password: %v", err)
	}
	if v := Classify(srv.Addr, err); v.Reason != ReasonAuth {
		t.Errorf("wrong password classified %q", v.Reason)
	}

	c, err := k.Dial(State{Proto: 2, Password: "s3cret", Auth: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr() != srv.Addr || c.Dedicated() || attached != btoi(c.Loopable()) {
		t.Errorf("dialled a shared connection to %s (want %s), dedicated %v, attached %d times (loopable %v)",
			c.Addr(), srv.Addr, c.Dedicated(), attached, c.Loopable())
	}
	c.Close()

	cl := &nodes{addr: deadAddr(t)}
	k.Target.Cluster = cl
	if _, _, err := k.Connect(State{Proto: 2}); !errors.As(err, &ne) || ne.Addr != cl.addr || cl.refreshes != 1 {
		t.Errorf("a dial nowhere: %v; the map asked again %d times (want 1)", err, cl.refreshes)
	}
	// A node named by the State is dialled, whatever the Target says.
	if nc, addr, err := k.Connect(State{Proto: 2, Bare: true, Password: "s3cret", Auth: true, Node: srv.Addr}); err != nil || addr != srv.Addr {
		t.Errorf("to the node named: %s, %v", addr, err)
	} else {
		nc.Close()
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The health verdict: PING as the check's login says; a change of verdict
// is logged once (a refused login at ERROR, naming the setting; Valkey gone
// at WARN; its return at INFO), a recent verdict is reused unless a fresh
// one is asked for, and failures are counted by reason, not lockproxy's
// own closing or a failover.
func TestConnectorVerdict(t *testing.T) {
	srv := valkeytest.Start(t, "requirepass s3cret")
	var log bytes.Buffer
	learnt, attached := 0, 0
	k := connector(srv.Addr, &log, &learnt, &attached)
	ctx := context.Background()
	login := State{Proto: 2, Bare: true, Password: "s3cret", Auth: true}

	if v := k.Verdict(ctx, true, login); !v.Up() || log.Len() != 0 {
		t.Fatalf("first verdict %v; log %q", v, log.String())
	}
	wrong := State{Proto: 2, Bare: true, Password: "wrong", Auth: true}
	if v := k.Verdict(ctx, false, wrong); !v.Up() {
		t.Errorf("a recent verdict is reused: %v", v)
	}
	v := k.Verdict(ctx, true, wrong)
	if v.Reason != ReasonAuth || !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "upstream.username and upstream.password") {
		t.Errorf("wrong password: %v; log %q", v, log.String())
	}
	log.Reset()
	k.Verdict(ctx, true, wrong)
	if log.Len() != 0 {
		t.Errorf("the same verdict logged again: %q", log.String())
	}
	k.Verdict(ctx, true, login)
	if !strings.Contains(log.String(), "level=INFO msg=\"Valkey answers again\"") {
		t.Errorf("its return: %q", log.String())
	}

	dead := deadAddr(t)
	k.Target.Addr = dead
	log.Reset()
	if v := k.Verdict(ctx, true, login); v.Reason != ReasonUnreachable || !strings.Contains(log.String(), "level=WARN") {
		t.Errorf("nothing there: %v; log %q", v, log.String())
	}
	if err := k.Check(ctx, dead, login); err == nil {
		t.Error("Check of nothing there passed")
	}

	_, _, err := k.Connect(State{Proto: 2})
	for _, e := range []error{err, ErrClosed, ErrFailover, &ReplyError{Msg: "ERR DB index is out of range"}, nil} {
		k.Health.Count(dead, e)
	}
	for i, r := range Reasons {
		want := int64(0)
		if r == ReasonUnreachable {
			want = 1
		}
		if got := k.Health.Errors[i].Load(); got != want {
			t.Errorf("errors counted as %s: %d, want %d", r, got, want)
		}
	}
}

// A Target names where connections go: the configured address, a
// cluster's node, Sentinel's primary (the master's name while unknown).
func TestTargetName(t *testing.T) {
	tg := Target{Addr: "10.0.0.1:6379"}
	if a, err := tg.Where(context.Background()); a != tg.Addr || err != nil || tg.Name() != tg.Addr {
		t.Errorf("one address: %s, %v, named %q", a, err, tg.Name())
	}
	tg.Forget() // nothing to ask again
	tg.Sentinel = &Sentinel{Master: "mymaster"}
	if got := tg.Name(); got != `Sentinel master "mymaster" (primary unknown)` {
		t.Errorf("Sentinel, primary unknown: %q", got)
	}
	tg.Sentinel.switchTo("10.0.0.2:6379")
	if a, err := tg.Where(context.Background()); a != "10.0.0.2:6379" || err != nil || tg.Name() != `10.0.0.2:6379 (Sentinel master "mymaster")` {
		t.Errorf("Sentinel: %s, %v, named %q", a, err, tg.Name())
	}
	tg.Forget()
	if tg.Sentinel.Known() != "" {
		t.Error("Forget kept Sentinel's answer")
	}
	cl := &nodes{addr: "10.0.0.3:6379"}
	tg.Cluster = cl
	if a, _ := tg.Where(context.Background()); a != cl.addr || tg.Name() != cl.addr {
		t.Errorf("cluster: %s, named %q", a, tg.Name())
	}
	cl.err = errors.New("no map")
	if tg.Name() != tg.Addr {
		t.Errorf("cluster without a map: named %q", tg.Name())
	}
}
