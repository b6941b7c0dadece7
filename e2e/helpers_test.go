package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/redis/go-redis/v9"
)

// env is one real Valkey with a lockproxy in front of it, both torn down when
// the test ends.
type env struct {
	t    *testing.T
	srv  *valkeytest.Server
	p    *proxy.Proxy
	addr string // the proxy's listen address
	done chan error
	// upstream, when set, is where the proxy connects instead of srv
	// (a relay in front of it).
	upstream string
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newEnv starts Valkey (with the given directives) and a proxy in front of it.
func newEnv(t *testing.T, opts proxy.Options, directives ...string) *env {
	t.Helper()
	srv := valkeytest.Start(t, directives...)
	e := &env{t: t, srv: srv}
	e.startProxy(opts)
	return e
}

// eachEngine runs f once per client engine, as subtests, with options that
// select it: event loops (EventLoops 1), event loops that poll before they
// sleep (BusyPoll), and a goroutine per client (-1).
func eachEngine(t *testing.T, f func(t *testing.T, o proxy.Options)) {
	t.Run("loops", func(t *testing.T) { f(t, proxy.Options{Config: policy.Config{EventLoops: 1}}) })
	t.Run("loops-busy-poll", func(t *testing.T) {
		f(t, proxy.Options{Config: policy.Config{EventLoops: 1, BusyPoll: policy.Duration(50 * time.Microsecond)}})
	})
	t.Run("goroutines", func(t *testing.T) { f(t, proxy.Options{Config: policy.Config{EventLoops: -1}}) })
}

// testEventLoops is the engine the suite runs with when a test does not
// choose: LOCKPROXY_TEST_EVENT_LOOPS=-1 gives a goroutine per client instead
// of event loops (.ci/run does both); 0 when unset (the default engine).
func testEventLoops() int {
	n, _ := strconv.Atoi(os.Getenv("LOCKPROXY_TEST_EVENT_LOOPS"))
	return n
}

func (e *env) startProxy(opts proxy.Options) {
	e.t.Helper()
	opts.Upstream.Addr = e.srv.Addr
	if e.upstream != "" {
		opts.Upstream.Addr = e.upstream
	}
	if opts.EventLoops == 0 {
		opts.EventLoops = testEventLoops()
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	p, err := proxy.New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	e.p, e.addr, e.done = p, l.Addr().String(), make(chan error, 1)
	go func() { e.done <- p.Serve(l) }()
	e.t.Cleanup(e.stopProxy)
}

func (e *env) stopProxy() {
	if e.p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.p.Shutdown(ctx); err != nil {
		e.t.Errorf("proxy shutdown: %v", err)
	}
	if err := <-e.done; err != nil {
		e.t.Errorf("proxy serve: %v", err)
	}
	e.p = nil
}

// client is a go-redis client through the proxy.
func (e *env) client(mod ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: e.addr, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second}
	for _, m := range mod {
		m(o)
	}
	c := redis.NewClient(o)
	e.t.Cleanup(func() { c.Close() })
	return c
}

// direct is a go-redis client straight to Valkey, to check what the proxy did.
func (e *env) direct() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr, MaxRetries: -1})
	e.t.Cleanup(func() { c.Close() })
	return c
}

// luaHas reports whether the server's scripts have a global (getfenv,
// setfenv and newproxy are gone where lua-enable-insecure-api is off, as
// in Debian's Redis 7.0.15-1~deb12u10; server came with Valkey 8).
func (e *env) luaHas(name string) bool {
	e.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr, MaxRetries: -1})
	defer c.Close()
	typ, err := c.Eval(ctx, "return type(rawget(_G, ARGV[1]))", nil, name).Text()
	if err != nil {
		e.t.Fatalf("asking the server for %s: %v", name, err)
	}
	return typ != "nil"
}

// raw is a plain TCP client that sends bytes and reads whole replies, for
// checking the wire byte for byte.
type raw struct {
	t   testing.TB
	nc  net.Conn
	buf []byte
	f   resp.Framer
}

func dialRaw(t testing.TB, addr string) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc}
}

func (r *raw) send(s string) {
	r.t.Helper()
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// do sends one command and returns its reply's bytes.
func (r *raw) do(args ...string) string {
	r.t.Helper()
	r.send(string(resp.AppendCommandStrings(nil, args...)))
	return r.read()
}

// read returns the next whole reply. It waits up to a minute, so that a
// loaded machine passes; the limit only ends a test whose reply never
// comes.
func (r *raw) read() string {
	r.t.Helper()
	s, err := r.readErr(time.Minute)
	if err != nil {
		r.t.Fatalf("read reply: %v (have %q)", err, r.buf)
	}
	return s
}

func (r *raw) readErr(timeout time.Duration) (string, error) {
	_ = r.nc.SetReadDeadline(time.Now().Add(timeout))
	chunk := make([]byte, 64<<10)
	for {
		n, err := r.f.Frame(r.buf)
		if err != nil {
			return "", err
		}
		if n > 0 {
			out := string(r.buf[:n])
			r.buf = append(r.buf[:0], r.buf[n:]...)
			r.f = resp.Framer{}
			return out, nil
		}
		m, err := r.nc.Read(chunk)
		r.buf = append(r.buf, chunk[:m]...)
		if err != nil && m == 0 {
			return "", err
		}
	}
}

// expectClosed reads until EOF, failing if the peer keeps the connection open.
func (r *raw) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	rest, err := io.ReadAll(r.nc)
	if err != nil {
		r.t.Fatalf("connection not closed: %v (read %q)", err, rest)
	}
}

func bulk(s string) string { return string(resp.AppendBulk(nil, []byte(s))) }

func mustContain(t *testing.T, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("got %q, want it to contain %q", got, want)
	}
}

func eq(t *testing.T, got, want any) {
	t.Helper()
	if gb, ok := got.([]byte); ok {
		if wb, ok := want.([]byte); ok {
			if !bytes.Equal(gb, wb) {
				t.Fatalf("got %d bytes, want %d bytes (different content)", len(gb), len(wb))
			}
			return
		}
	}
	if got != want {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

var ctx = context.Background()

func redisCmd(args ...string) []byte { return resp.AppendCommandStrings(nil, args...) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// whileStopped runs f with srv stopped (SIGSTOP), and lets it run on after
// (SIGCONT), also when f fails the test.
func whileStopped(t *testing.T, srv *valkeytest.Server, f func()) {
	t.Helper()
	if err := srv.Process().Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Process().Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}()
	f()
}

// primaryWithReplica starts a primary (with directives) and a replica of it,
// and waits until the replica is online.
func primaryWithReplica(t *testing.T, directives ...string) (primary, replica *valkeytest.Server) {
	t.Helper()
	primary = valkeytest.Start(t, append([]string{"repl-diskless-sync-delay 0"}, directives...)...)
	replica = valkeytest.Start(t, "repl-diskless-sync-delay 0", fmt.Sprintf("replicaof 127.0.0.1 %d", primary.Port))
	waitReplicaOnline(t, primary, replica)
	return primary, replica
}

// waitReplicaOnline waits until replica's link to its primary is up and the
// primary counts it online, so that WAIT can count it.
func waitReplicaOnline(t *testing.T, primary, replica *valkeytest.Server) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ri, _ := valkeytest.Do(replica.Addr, "INFO", "replication")
		pi, _ := valkeytest.Do(primary.Addr, "INFO", "replication")
		if strings.Contains(ri, "master_link_status:up") && strings.Contains(pi, "state=online") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the replica %s of %s did not come online", replica.Addr, primary.Addr)
}
