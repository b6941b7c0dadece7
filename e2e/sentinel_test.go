package e2e_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
)

// Sentinel: a primary, a replica and three valkey-sentinel processes
// (quorum 2) started by the test; lockproxy finds the primary through them
// and follows failovers.

const sentinelMaster = "mymaster"

// sentinelProc is one valkey-sentinel process.
type sentinelProc struct {
	addr string
	dir  string
	cmd  *exec.Cmd
}

func sentinelBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("valkey-sentinel")
	if err != nil {
		t.Skipf("valkey-sentinel not on PATH (Debian package valkey-sentinel): %v", err)
	}
	return bin
}

// startSentinels starts n sentinels monitoring primary with the quorum.
func startSentinels(t *testing.T, n, quorum int, primary *valkeytest.Server) []*sentinelProc {
	t.Helper()
	bin := sentinelBinary(t)
	var ss []*sentinelProc
	for i := 0; i < n; i++ {
		s := &sentinelProc{dir: t.TempDir()}
		port := valkeytest.FreePort(t)
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		conf := filepath.Join(s.dir, "sentinel.conf")
		// Sentinel rewrites its file, so it lives in the temp dir.
		err := os.WriteFile(conf, []byte(fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
logfile %s
sentinel monitor %s 127.0.0.1 %d %d
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 10000
sentinel parallel-syncs %s 1
`, port, s.dir, filepath.Join(s.dir, "sentinel.log"), sentinelMaster, primary.Port, quorum,
			sentinelMaster, sentinelMaster, sentinelMaster)), 0o600)
		if err != nil {
			t.Fatal(err)
		}
		s.cmd = exec.Command(bin, conf)
		if err := s.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
		ss = append(ss, s)
	}
	for _, s := range ss {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
		waitFor(t, 10*time.Second, "sentinel "+s.addr+" answers", func() bool { return c.Ping(ctx).Err() == nil })
		c.Close()
	}
	return ss
}

// answeredBy asks, through the proxy, which server answers and in what role.
func answeredBy(r *raw) (port, role string) {
	server := r.do("INFO", "server")
	repl := r.do("INFO", "replication")
	return infoField(server, "tcp_port"), infoField(repl, "role")
}

// sentinelKnows reports whether s sees the replica at port as a healthy
// replica of the master, and how many other sentinels it knows.
func sentinelKnows(s *sentinelProc, replicaPort int) (replicaOK bool, others int) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	reps, _ := c.Replicas(ctx, sentinelMaster).Result()
	for _, r := range reps {
		if r["port"] == strconv.Itoa(replicaPort) && r["flags"] == "slave" && r["master-link-status"] == "ok" {
			replicaOK = true
		}
	}
	sents, _ := c.Sentinels(ctx, sentinelMaster).Result()
	return replicaOK, len(sents)
}

// writer sends SET through the proxy every 5 ms and tallies the replies.
type writer struct {
	mu       sync.Mutex
	ok       int
	errs     map[string]int // by error code word
	lastErr  time.Time
	firstErr time.Time
}

func (w *writer) run(t *testing.T, addr string, quit chan struct{}, done *sync.WaitGroup) {
	w.errs = map[string]int{}
	r := dialRaw(t, addr)
	done.Add(1)
	go func() {
		defer done.Done()
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			got, err := r.readErrDo(5*time.Second, "SET", "w:"+strconv.Itoa(i), strconv.Itoa(i))
			if err != nil {
				t.Errorf("writer: no reply: %v", err)
				return
			}
			w.mu.Lock()
			if got == "+OK\r\n" {
				w.ok++
			} else {
				code := strings.Fields(strings.TrimPrefix(got, "-"))[0]
				w.errs[code]++
				if w.firstErr.IsZero() {
					w.firstErr = time.Now()
				}
				w.lastErr = time.Now()
			}
			w.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

// sentinelSetup is a primary, its replica, three sentinels (quorum 2) and
// a proxy that finds the primary through them.
type sentinelSetup struct {
	primary, replica *valkeytest.Server
	ss               []*sentinelProc
	e                *env
	r                *raw // a client of the proxy
}

func newSentinelSetup(t *testing.T) *sentinelSetup {
	t.Helper()
	sentinelBinary(t)
	// No 5 s wait before a full sync (Valkey's diskless default).
	primary, replica := primaryWithReplica(t)
	ss := startSentinels(t, 3, 2, primary)
	waitFor(t, 15*time.Second, "sentinel sees the replica", func() bool { ok, _ := sentinelKnows(ss[0], replica.Port); return ok })
	e := &env{t: t, srv: primary} // Upstream (the fallback) is the first primary
	e.startProxy(proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{Sentinel: config.SentinelConfig{Master: sentinelMaster, Addrs: []string{ss[0].addr, ss[1].addr, ss[2].addr}}, ReplyTimeout: config.Duration(time.Second), ReconnectBackoff: config.Duration(20 * time.Millisecond), MaxBackoff: config.Duration(200 * time.Millisecond), DialTimeout: config.Duration(time.Second)}}})
	r := dialRaw(t, e.addr)
	port, role := answeredBy(r)
	t.Logf("before failover: answered by port %s, role %s (primary %d, replica %d)", port, role, primary.Port, replica.Port)
	eq(t, port, strconv.Itoa(primary.Port))
	eq(t, role, "master")
	eq(t, r.do("SET", "k", "before"), "+OK\r\n")
	return &sentinelSetup{primary: primary, replica: replica, ss: ss, e: e, r: r}
}

// SENTINEL FAILOVER: new commands go to the new primary, writes succeed
// there, and a session whose state lived on the old one is told and closed.
func TestSentinelFailoverCommand(t *testing.T) {
	testStart := time.Now()
	st := newSentinelSetup(t)
	r := st.r
	tx := dialRaw(t, st.e.addr)
	eq(t, tx.do("MULTI"), "+OK\r\n") // a session with its own connection to the old primary

	var w writer
	quit := make(chan struct{})
	var wg sync.WaitGroup
	w.run(t, st.e.addr, quit, &wg)
	time.Sleep(200 * time.Millisecond)

	sc := redis.NewSentinelClient(&redis.Options{Addr: st.ss[0].addr, MaxRetries: -1})
	defer sc.Close()
	start := time.Now()
	waitFor(t, 10*time.Second, "SENTINEL FAILOVER accepted", func() bool {
		err := sc.Failover(ctx, sentinelMaster).Err()
		if err != nil {
			t.Logf("SENTINEL FAILOVER: %v", err)
		}
		return err == nil
	})
	waitFor(t, 15*time.Second, "the proxy answers from the new primary", func() bool {
		port, role := answeredBy(r)
		return port == strconv.Itoa(st.replica.Port) && role == "master"
	})
	t.Logf("SENTINEL FAILOVER: the proxy's commands reach the new primary (port %d) %v after the request", st.replica.Port, time.Since(start).Round(time.Millisecond))
	eq(t, r.do("SET", "k", "after"), "+OK\r\n")
	direct := redis.NewClient(&redis.Options{Addr: st.replica.Addr})
	defer direct.Close()
	eq(t, direct.Get(ctx, "k").Val(), "after") // written on the new primary
	eq(t, infoField(direct.Info(ctx, "replication").Val(), "role"), "master")

	// The MULTI session's state lived on the old primary: it is told and
	// closed rather than moved.
	_, _ = tx.nc.Write(redisCmd("EXEC"))
	expectToldAndClosed(t, "MULTI session across the failover", tx)

	time.Sleep(300 * time.Millisecond)
	close(quit)
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer through the proxy, every 5 ms: %d SET OK, errors %v (for %v)", w.ok, w.errs, w.lastErr.Sub(w.firstErr).Round(time.Millisecond))
	for code := range w.errs {
		if code != "READONLY" && code != "UPSTREAM" {
			t.Errorf("writer got %s errors during the failover", code)
		}
	}
	if w.ok == 0 {
		t.Error("the writer never succeeded")
	}
	t.Logf("whole test %v", time.Since(testStart).Round(time.Millisecond))
}

// The primary is killed: the sentinels (quorum 2) agree it is down and
// promote the replica; the proxy follows.
func TestSentinelPrimaryKilled(t *testing.T) {
	testStart := time.Now()
	st := newSentinelSetup(t)
	waitFor(t, 15*time.Second, "sentinels know each other", func() bool {
		_, others := sentinelKnows(st.ss[0], st.replica.Port)
		return others == 2
	})
	var w writer
	quit := make(chan struct{})
	var wg sync.WaitGroup
	w.run(t, st.e.addr, quit, &wg)
	time.Sleep(200 * time.Millisecond)
	st.primary.Stop()
	start := time.Now()
	waitFor(t, 20*time.Second, "the proxy answers from the promoted replica", func() bool {
		got, err := st.r.readErrDo(5*time.Second, "INFO", "server")
		if err != nil || !strings.HasPrefix(got, "$") {
			return false
		}
		return infoField(got, "tcp_port") == strconv.Itoa(st.replica.Port) && infoField(st.r.do("INFO", "replication"), "role") == "master"
	})
	followed := time.Now()
	t.Logf("primary killed: the proxy's commands reach the promoted replica (port %d) %v after the kill (down-after-milliseconds 1000)", st.replica.Port, followed.Sub(start).Round(time.Millisecond))
	eq(t, retryUpstream(t, st.r, "SET", "k", "after-kill"), "+OK\r\n")
	direct := redis.NewClient(&redis.Options{Addr: st.replica.Addr})
	defer direct.Close()
	eq(t, direct.Get(ctx, "k").Val(), "after-kill")
	time.Sleep(300 * time.Millisecond)
	close(quit)
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer through the proxy, every 5 ms: %d SET OK, errors %v while the primary was gone (%v)", w.ok, w.errs, w.lastErr.Sub(w.firstErr).Round(time.Millisecond))
	for code := range w.errs {
		if code != "UPSTREAM" && code != "READONLY" {
			t.Errorf("writer got %s errors during the failover", code)
		}
	}
	t.Logf("the writer's last error came %v after another client first reached the new primary", w.lastErr.Sub(followed).Round(time.Millisecond))
	if w.lastErr.After(followed.Add(time.Second)) {
		t.Errorf("the writer still got errors %v after the proxy had followed the failover", w.lastErr.Sub(followed))
	}
	t.Logf("whole test %v", time.Since(testStart).Round(time.Millisecond))
}

// With Sentinel, everything the proxy asks Valkey itself (the command table
// lock rules need, COMMAND GETKEYS, LOCKPROXY LOCKS) must go to the primary
// Sentinel names too, not to upstream.addr, which is only a fallback (its
// default, 127.0.0.1:6379, is usually nothing at all).
func TestSentinelLockRulesFollowPrimary(t *testing.T) {
	sentinelBinary(t)
	primary := valkeytest.Start(t)
	ss := startSentinels(t, 1, 1, primary)
	opts := rulesOptions(t, rule("rewrite"))
	opts.Upstream.Sentinel = config.SentinelConfig{Master: sentinelMaster, Addrs: []string{ss[0].addr}}
	opts.Upstream.ReconnectBackoff = config.Duration(20 * time.Millisecond)
	// The fallback address answers nothing.
	nothing := &valkeytest.Server{Addr: fmt.Sprintf("127.0.0.1:%d", valkeytest.FreePort(t))}
	e := &env{t: t, srv: nothing}
	e.startProxy(opts)
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("PING"), "+PONG\r\n") // plain commands reach the primary
	eq(t, a.do("SET", "s:lock", "tok", "NX", "PX", "10000"), "+OK\r\n")
	mustContain(t, b.do("DEL", "s:lock"), "-NOTOWNER")
	eq(t, a.do("DEL", "s:lock"), ":1\r\n")
}
