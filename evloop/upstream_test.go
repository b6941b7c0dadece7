//go:build linux

package evloop

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/upstream"
)

// replies is an upstream.Sink that passes each run of replies on.
type replies chan string

func (r replies) Deliver(_ uint64, b []byte, _ int) { r <- string(b) }
func (r replies) DeliverCork(seq uint64, b []byte, n int) int {
	r.Deliver(seq, b, n)
	return n
}
func (r replies) Uncork(int)                             {}
func (r replies) Redirect(upstream.Pend, []byte, string) {}
func (r replies) Alone() bool                            { return true }

// upConn is a shared connection to the real Valkey at addr, read by l, and
// its socket.
func upConn(t *testing.T, l *Loop, addr string, wg *sync.WaitGroup) (*upstream.Conn, net.Conn) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &upstream.Host{WG: wg, Log: slog.New(slog.DiscardHandler), ReplyTimeout: time.Minute,
		RoundTrip: func([]upstream.Pend) {},
		Failed:    func(string, error, int) {},
		LostText:  func(string, error, bool) string { return "ERR lost" }}
	c := upstream.New(h, nc, addr, nil, nil)
	if !l.AddUp(c) {
		t.Fatal("a TCP connection was not added")
	}
	c.Start()
	return c, nc
}

// TestLoopUpstream, against a real Valkey: what a client's pump queues on a
// shared connection goes out at the end of the round (Queued, Uncork), and
// the loop reads the connection and hands the reply to its sink. A
// connection that fails is detached and its socket closed by the loop;
// closing the loop fails the connections it still reads.
func TestLoopUpstream(t *testing.T) {
	srv := valkeytest.Start(t)
	var wg sync.WaitGroup
	l := newLoop(t, Config{})
	sink := make(replies, 16)
	// Added before the client, so that its pump sees c.
	c, nc := upConn(t, l, srv.Addr, &wg)
	// The client sends ECHO of what it read.
	cl := newClient(t, l, 64, func(cl *testClient, n int) {
		if n == 0 {
			return
		}
		arg := string(cl.buf[:n])
		cmd := "*2\r\n$4\r\nECHO\r\n$" + string(rune('0'+len(arg))) + "\r\n" + arg + "\r\n"
		if !c.Send([]byte(cmd), []upstream.Pend{{Sink: sink}}, l) {
			sink <- "dead"
		}
	})
	if !c.Looped() {
		t.Fatal("the connection is not read by the loop")
	}
	for _, arg := range []string{"a", "bc", "def"} {
		cl.send(t, arg)
		cl.want(t, arg)
		if got, want := <-sink, "$"+string(rune('0'+len(arg)))+"\r\n"+arg+"\r\n"; got != want {
			t.Fatalf("reply %q, want %q", got, want)
		}
	}

	c.Fail(errors.New("failed by the test"))
	// Detach's round, then one more: the socket is closed by then.
	l.Resume(&cl.m)
	cl.want(t, "")
	l.Resume(&cl.m)
	cl.want(t, "")
	if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a detached connection's socket: read gave %v, want it closed", err)
	}

	live, _ := upConn(t, l, srv.Addr, &wg)
	l.Close()
	if err := live.Err(); !errors.Is(err, upstream.ErrClosed) {
		t.Fatalf("a connection the closed loop read: %v, want upstream.ErrClosed", err)
	}
	wg.Wait() // their writers ended
}
