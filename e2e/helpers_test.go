package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
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

// The environments. launch is the one place an env is made; newEnv (a new
// valkey-server), clusterEnv (the shared cluster), fileEnv (options from a
// configuration file, as the program reads it) and env.another (a second
// proxy in front of the same server) only say what it is in front of.
// rulesOptions and withRules give a test's lock rules to any of them.

// launch starts a proxy with opts in front of srv, stopped when the test
// ends.
func launch(t *testing.T, srv *valkeytest.Server, upstream string, opts proxy.Options) *env {
	t.Helper()
	e := &env{t: t, srv: srv, upstream: upstream}
	e.startProxy(opts)
	return e
}

// newEnv starts Valkey (with the given directives) and a proxy in front of it.
func newEnv(t *testing.T, opts proxy.Options, directives ...string) *env {
	t.Helper()
	return launch(t, valkeytest.Start(t, directives...), "", opts)
}

// clusterEnv is a proxy in front of the shared Valkey Cluster
// (valkeytest.SharedCluster; TestMain stops it).
func clusterEnv(t *testing.T, opts proxy.Options) (*env, *valkeytest.Cluster) {
	t.Helper()
	cl := valkeytest.SharedCluster(t)
	opts.Upstream.Cluster.Seeds = cl.Seeds()
	return launch(t, cl.Nodes[0], "", opts), cl
}

// fileEnv is a proxy whose options come from a configuration file holding
// yaml (its path is returned, for reloads), in front of a new Valkey.
func fileEnv(t *testing.T, yaml string, mod ...func(*proxy.Options)) (*env, string) {
	t.Helper()
	path := writeFile(t, filepath.Join(t.TempDir(), "lockproxy.yaml"), yaml)
	srv := valkeytest.Start(t)
	// As --upstream overrides the file, at start and on every reload.
	override := func(c *config.Config) { c.Upstream.Addr = srv.Addr }
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	override(cfg)
	opts := proxy.Options{Config: *cfg, ConfigPath: path, ConfigOverride: override, Version: "test"}
	for _, m := range mod {
		m(&opts)
	}
	return launch(t, srv, "", opts), path
}

// another starts a second proxy in front of the same valkey-server, with
// its own lock rules (the same YAML), as a second instance of a proxy tier.
func (e *env) another(t *testing.T, locksYAML string, o proxy.Options) *env {
	t.Helper()
	return launch(t, e.srv, e.upstream, withRules(t, locksYAML, o))
}

// rulesOptions builds proxy options from a YAML config snippet (its locks:
// and on_flush:), then applies mod.
func rulesOptions(t *testing.T, locksYAML string, mod ...func(*proxy.Options)) proxy.Options {
	t.Helper()
	opts := withRules(t, locksYAML, proxy.Options{})
	for _, m := range mod {
		m(&opts)
	}
	return opts
}

// withRules is o with the lock rules of a YAML config snippet (its locks:
// and on_flush:).
func withRules(t *testing.T, locksYAML string, o proxy.Options) proxy.Options {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(locksYAML))
	if err != nil {
		t.Fatal(err)
	}
	o.Locks, o.OnFlush = cfg.Locks, cfg.OnFlush
	return o
}

// eachEngine runs f once per way the event loop waits for work, as
// subtests, with options that select it: a loop that sleeps at once
// (EventLoops 1), and one that polls before it sleeps (BusyPoll).
func eachEngine(t *testing.T, f func(t *testing.T, o proxy.Options)) {
	t.Run("loops", func(t *testing.T) { f(t, proxy.Options{Config: config.Config{EventLoops: 1}}) })
	t.Run("loops-busy-poll", func(t *testing.T) {
		f(t, proxy.Options{Config: config.Config{EventLoops: 1, BusyPoll: config.Duration(50 * time.Microsecond)}})
	})
}

func (e *env) startProxy(opts proxy.Options) {
	e.t.Helper()
	opts.Upstream.Addr = e.srv.Addr
	if e.upstream != "" {
		opts.Upstream.Addr = e.upstream
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	// Most tests act as Valkey's operator too (CONFIG SET, DEBUG SLEEP,
	// CLIENT PAUSE through the proxy): a test that leaves admin_commands
	// unset forwards them. The gate's own tests (admin_commands_test.go)
	// set it, and config's tests check that a file without it means admin.
	if opts.AdminCommands == "" {
		opts.AdminCommands = config.AdminCommandsForward
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

// dialRaw is a raw connection to addr, closed when the test ends.
func dialRaw(t testing.TB, addr string) *raw {
	t.Helper()
	return dialFrom(t, "", addr)
}

// dialFrom is dialRaw from another loopback address (local; "" for any):
// a client on another host, for session: client_addr.
func dialFrom(t testing.TB, local, addr string) *raw {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc}
}

// dialNamed is a raw connection that has set its client name.
func dialNamed(t testing.TB, addr, name string) *raw {
	t.Helper()
	r := dialRaw(t, addr)
	if name != "" {
		if got := r.do("CLIENT", "SETNAME", name); got != "+OK\r\n" {
			t.Fatalf("CLIENT SETNAME %s: %q", name, got)
		}
	}
	return r
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

// readErrDo sends one command and returns its reply, or the error that
// came instead within timeout.
func (r *raw) readErrDo(timeout time.Duration, args ...string) (string, error) {
	if _, err := r.nc.Write(resp.AppendCommandStrings(nil, args...)); err != nil {
		return "", err
	}
	return r.readErr(timeout)
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
	resume := stopServer(t, srv)
	defer resume()
	f()
}

// stopServer stops srv (SIGSTOP) and returns what lets it run on (SIGCONT),
// once, at the latest when the test ends.
func stopServer(t *testing.T, srv *valkeytest.Server) (resume func()) {
	t.Helper()
	proc := srv.Process()
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() { once.Do(func() { _ = proc.Signal(syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// primaryWithReplica starts a primary (with directives) and a replica of it,
// and waits until the replica is online.
func primaryWithReplica(t *testing.T, directives ...string) (primary, replica *valkeytest.Server) {
	t.Helper()
	return replicated(t, directives, nil)
}

// replicated starts a primary and a replica of it, with directives of
// their own each, and waits until the replica is online.
func replicated(t *testing.T, primaryDirectives, replicaDirectives []string) (primary, replica *valkeytest.Server) {
	t.Helper()
	primary = valkeytest.Start(t, append([]string{"repl-diskless-sync-delay 0"}, primaryDirectives...)...)
	replica = valkeytest.Start(t, append([]string{"repl-diskless-sync-delay 0", fmt.Sprintf("replicaof 127.0.0.1 %d", primary.Port)}, replicaDirectives...)...)
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

// waitFor polls cond until it holds and returns how long that took. within
// is how long it takes on a quiet machine; the wait goes on for ten times
// as long (two minutes at least), so that a loaded machine still passes: it
// is a wait for something the servers will do (Sentinel's timers, a
// replica's sync), not a timing bound, and the limit only ends a test that
// is broken.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	limit := max(10*within, 2*time.Minute)
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
	return time.Since(start)
}

// writeFile writes data to path (mode 0600) and returns path.
func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The INFO parsers: INFO's text is "name:value" lines under "# Section"
// headers; a keyspace line's value (db0) is "keys=1,expires=0,...".

// infoFields is every field of an INFO reply, by name.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			out[k] = v
		}
	}
	return out
}

// infoLookup is one field of an INFO reply, and whether it is there.
func infoLookup(info, name string) (string, bool) {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v, true
		}
	}
	return "", false
}

// infoField is one field of an INFO reply, "" when it has none.
func infoField(info, name string) string {
	v, _ := infoLookup(info, name)
	return v
}

// infoInt is one integer field of an INFO reply; the test fails without it.
func infoInt(t *testing.T, info, name string) int64 {
	t.Helper()
	v, ok := infoLookup(info, name)
	if !ok {
		t.Fatalf("no %s in INFO:\n%s", name, info)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", name, v)
	}
	return n
}

// keyspaceField reads one field of a db line (infoField(info, "db0")).
func keyspaceField(t *testing.T, line, name string) int64 {
	t.Helper()
	for _, kv := range strings.Split(line, ",") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s in %q", name, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in %q", name, line)
	return 0
}

// Lock rules and what the proxy recorded.

// rule is a lock rule for "*:lock" with the given release mode.
func rule(release string) string {
	return fmt.Sprintf("locks:\n  - pattern: \"*:lock\"\n    release: %s\n", release)
}

// hasEvent reports whether the proxy's last 100 lock events hold one with
// outcome on key.
func hasEvent(e *env, outcome proxy.Outcome, key string) bool {
	for _, ev := range e.p.Events(100) {
		if ev.Outcome == outcome && ev.Key == key {
			return true
		}
	}
	return false
}

// The fenced lock rule.

// fenceRule is a fenced lock rule; mark, if given, is the fence's mark
// (lock by default).
func fenceRule(check, unfenced string, mark ...string) string {
	m := "lock"
	if len(mark) > 0 {
		m = mark[0]
	}
	return fmt.Sprintf(`locks:
  - pattern: "{*}:lock"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data", "{base}:items"]
      check: %s
      mark: %s
      unfenced_writes: %s
`, check, m, unfenced)
}

// Admin commands (LOCKPROXY ...) and /metrics.

func admin(t *testing.T, c *redis.Client, args ...any) any {
	t.Helper()
	v, err := c.Do(ctx, append([]any{"LOCKPROXY"}, args...)...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("LOCKPROXY %v: %v", args, err)
	}
	return v
}

// rec turns a go-redis reply record (a flat array in RESP2, a map in RESP3)
// into field → text. A null reads "<nil>".
func rec(t *testing.T, v any) map[string]string {
	t.Helper()
	str := func(x any) string {
		if x == nil {
			return "<nil>"
		}
		return fmt.Sprint(x)
	}
	out := map[string]string{}
	switch v := v.(type) {
	case []any:
		if len(v)%2 != 0 {
			t.Fatalf("record with %d elements", len(v))
		}
		for i := 0; i < len(v); i += 2 {
			out[str(v[i])] = str(v[i+1])
		}
	case map[any]any:
		for k, x := range v {
			out[str(k)] = str(x)
		}
	default:
		t.Fatalf("not a record: %T %v", v, v)
	}
	return out
}

func recs(t *testing.T, v any) []map[string]string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("not a list: %T", v)
	}
	out := make([]map[string]string, len(list))
	for i, x := range list {
		out[i] = rec(t, x)
	}
	return out
}

// metrics scrapes /metrics and returns each sample line's value by its name
// and labels as printed ("lockproxy_grants_total{rule=\"*:lock\"}").
func metrics(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(scrape(t, e)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// scrape returns what the proxy's /metrics serves.
func scrape(t *testing.T, e *env) []byte {
	t.Helper()
	srv := httptest.NewServer(e.p.MetricsHandler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func metric(t *testing.T, m map[string]float64, series string) float64 {
	t.Helper()
	v, ok := m[series]
	if !ok {
		t.Fatalf("no metric %s", series)
	}
	return v
}

// The cluster: its slot map, keys on a node, a command sent straight to
// a key's node.

// slotMap reads the cluster's slot map now, straight from a node.
func slotMap(t *testing.T, cl *valkeytest.Cluster) *cluster.Map {
	t.Helper()
	for _, n := range cl.Nodes {
		if n.Process() == nil {
			continue
		}
		v, _, err := resp.Parse(valkeytest.Dial(t, n.Addr, 2).Do(t, "CLUSTER", "SHARDS"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := cluster.FromShards(v, false, n.Addr)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Fatal("no cluster node runs")
	return nil
}

// keysOn returns n keys with the prefix whose slots node serves now.
func keysOn(m *cluster.Map, node, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if a, _ := m.Primary(cluster.Slot([]byte(k))); a == node {
			out = append(out, k)
		}
	}
	return out
}

// keysEveryPrimary returns n keys on each primary, primary by primary.
func keysEveryPrimary(m *cluster.Map, prefix string, n int) []string {
	var keys []string
	for _, p := range m.Primaries {
		keys = append(keys, keysOn(m, p, prefix, n)...)
	}
	return keys
}

// directTo sends a command to the node serving its key's slot, as a
// cluster-aware client would, and returns the reply bytes.
func directTo(t *testing.T, m *cluster.Map, key string, args ...string) string {
	t.Helper()
	addr, ok := m.Primary(cluster.Slot([]byte(key)))
	if !ok {
		t.Fatalf("no primary for %q", key)
	}
	return string(valkeytest.Dial(t, addr, 2).Do(t, args...))
}

// Scripts.

// The scripts under scriptcheck/testdata/lua were written for lockproxy's
// tests in the styles of well-known lock libraries (and of EchoMQ's queue
// scripts); the analysis's own tests classify the same files.
func luaFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "scriptcheck", "testdata", "lua", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Upstream restarts.

// retryUpstream sends a command until it gets something other than an
// -UPSTREAM error (the first command after a restart may meet the old
// connection's death).
func retryUpstream(t *testing.T, r *raw, args ...string) string {
	t.Helper()
	var got string
	for i := 0; i < 50; i++ {
		got = r.do(args...)
		if !strings.HasPrefix(got, "-UPSTREAM") {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%v: still %q", args, got)
	return ""
}

// lockproxy as a process of its own: built, started on a configuration
// file, killed.

// buildBinary builds a command of this module into a temporary directory.
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// lockproxyProc is the lockproxy binary running with a config file.
type lockproxyProc struct {
	addr   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
}

var listenRE = regexp.MustCompile(`msg="lockproxy listening" listen=(\S+)`)

func startLockproxy(t *testing.T, bin, config string) *lockproxyProc {
	t.Helper()
	lp := &lockproxyProc{cmd: exec.Command(bin, "--config", config)}
	pipe, err := lp.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lp.mu.Lock()
			lp.stderr.WriteString(sc.Text() + "\n")
			lp.mu.Unlock()
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
		close(addrc)
	}()
	t.Cleanup(func() {
		_ = lp.cmd.Process.Signal(syscall.SIGINT) // SIGINT skips drain_delay
		done := make(chan struct{})
		go func() { lp.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			lp.cmd.Process.Kill()
			<-done
		}
	})
	select {
	case a, ok := <-addrc:
		if !ok {
			lp.cmd.Wait()
			t.Fatalf("lockproxy exited before listening:\n%s", lp.log())
		}
		lp.addr = a
	case <-time.After(10 * time.Second):
		t.Fatalf("lockproxy did not start:\n%s", lp.log())
	}
	return lp
}

func (lp *lockproxyProc) log() string {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return lp.stderr.String()
}

// kill stops the lockproxy process with SIGKILL: no drain, no goodbye.
func (lp *lockproxyProc) kill(t *testing.T) {
	t.Helper()
	if err := lp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = lp.cmd.Wait()
}

// logRecorder is a slog handler that keeps the proxy's log records with one
// message: how many came (n), and the values of one of their attributes
// (vals, for attr), in order. With hold set, each such record waits until
// hold is closed before it is kept, as a log written to a full pipe or a
// slow disk does.
type logRecorder struct {
	msg  string
	attr string
	hold chan struct{}
	mu   sync.Mutex
	n    int
	vals []string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	if r.Message != h.msg {
		return nil
	}
	if h.hold != nil {
		<-h.hold
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	r.Attrs(func(a slog.Attr) bool {
		if h.attr != "" && a.Key == h.attr {
			h.vals = append(h.vals, a.Value.String())
		}
		return true
	})
	return nil
}
