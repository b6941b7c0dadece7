package e2e_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// Upstream faults: Valkey restarted, killed and paused (SIGSTOP) while many
// clients pipeline through the proxy. Every command must get its own reply
// or an -UPSTREAM error, never another client's reply and never no reply;
// afterwards the proxy is back in service by itself. The tests assert what
// happened, not how fast: deadlines are generous (replyDeadline) so that a
// loaded machine cannot fail them, and the waits they measure are logged.

const faultReplyTimeout = 300 * time.Millisecond

// replyDeadline is how long a test waits for a reply or a close before it
// calls it missing: far beyond every timeout the proxy is configured with.
const replyDeadline = 20 * time.Second

// settle is how long after Valkey is back the proxy gets to redial every
// shared connection (max_backoff 200ms, many times over) before errors count
// as errors.
const settle = 2 * time.Second

// faultOptions are the proxy options of the fault tests: a small reply
// timeout and a quick reconnect, so each test takes a second or two.
func faultOptions() proxy.Options {
	return proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{ReplyTimeout: config.Duration(faultReplyTimeout), ReconnectBackoff: config.Duration(20 * time.Millisecond), MaxBackoff: config.Duration(200 * time.Millisecond), DialTimeout: config.Duration(time.Second)}}}
}

// trafficStats is what the traffic of one fault test saw.
type trafficStats struct {
	mu         sync.Mutex
	ok, errs   int           // correct replies, -UPSTREAM errors
	maxWait    time.Duration // longest wait for one reply, from its batch's send (logged)
	lastErr    time.Time     // when the last -UPSTREAM error arrived
	okAfter    map[int]int   // correct replies per client after `recovered`
	recovered  time.Time
	errSamples []string
}

// runTraffic starts clients that each pipeline batches of ECHO, SET and GET
// with payloads unique to the client and the batch, and check every reply:
// the exact expected reply, or an -UPSTREAM error. A reply meant for another
// client, or none within replyDeadline, fails the test.
// It returns a stop function that waits for the clients to finish.
func runTraffic(t *testing.T, addr string, clients, batch int, st *trafficStats) (stop func()) {
	t.Helper()
	st.okAfter = map[int]int{}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			r := &raw{t: t, nc: nc}
			for n := 0; ; n++ {
				select {
				case <-quit:
					return
				default:
				}
				var out []byte
				var want []string
				for i := 0; i < batch; i++ {
					id := fmt.Sprintf("c%d-b%d-i%d", c, n, i)
					out = resp.AppendCommandStrings(out, "ECHO", "echo-"+id)
					want = append(want, bulk("echo-"+id))
					out = resp.AppendCommandStrings(out, "SET", "fault:"+id, "val-"+id)
					want = append(want, "+OK\r\n")
					out = resp.AppendCommandStrings(out, "GET", "fault:"+id)
					want = append(want, bulk("val-"+id))
				}
				sent := time.Now()
				if _, err := nc.Write(out); err != nil {
					t.Errorf("client %d: write: %v (a shared session must not be closed by an upstream fault)", c, err)
					return
				}
				for i, w := range want {
					got, err := r.readErr(replyDeadline)
					now := time.Now()
					if err != nil {
						t.Errorf("client %d: no reply %d of batch %d after %v: %v", c, i, n, now.Sub(sent), err)
						return
					}
					wait := now.Sub(sent)
					st.mu.Lock()
					st.maxWait = max(st.maxWait, wait)
					switch {
					case got == w:
						st.ok++
						if !st.recovered.IsZero() && sent.After(st.recovered) {
							st.okAfter[c]++
						}
					case strings.HasPrefix(got, "-UPSTREAM "):
						st.errs++
						st.lastErr = now
						if len(st.errSamples) < 3 {
							st.errSamples = append(st.errSamples, strings.TrimSpace(got))
						}
					case i%3 == 2 && got == "$-1\r\n":
						// GET after Valkey lost its data between the SET
						// and the GET (a restart): nil, never another value.
						st.ok++
					default:
						st.mu.Unlock()
						t.Errorf("client %d: reply %d of batch %d: got %q, want %q or an -UPSTREAM error", c, i, n, got, w)
						return
					}
					st.mu.Unlock()
				}
			}
		}()
	}
	return func() { close(quit); wg.Wait() }
}

// dedicatedSessions opens a MULTI session (a transaction open on Valkey), a
// subscriber and a client blocked in BLPOP. It returns once Valkey has all
// three: the BLPOP, which gets no reply, is waited for in Valkey's own
// count of blocked clients, so that a fault cannot come before its
// connection is made.
type dedicatedSessions struct{ multi, sub, blpop *raw }

func openDedicated(t *testing.T, e *env) dedicatedSessions {
	t.Helper()
	addr := e.addr
	d := dedicatedSessions{multi: dialRaw(t, addr), sub: dialRaw(t, addr), blpop: dialRaw(t, addr)}
	eq(t, d.multi.do("MULTI"), "+OK\r\n")
	eq(t, d.multi.do("SET", "tx", "1"), "+QUEUED\r\n")
	eq(t, d.sub.do("SUBSCRIBE", "news"), "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n")
	d.blpop.send(string(redisCmd("BLPOP", "never", "0")))
	direct := e.direct()
	for deadline := time.Now().Add(replyDeadline); !strings.Contains(direct.Info(ctx, "clients").Val(), "blocked_clients:1\r\n"); {
		if time.Now().After(deadline) {
			t.Fatalf("the BLPOP session is not blocked in Valkey after %v", replyDeadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return d
}

// expectToldAndClosed reads what a dedicated session gets after its
// upstream connection was lost: at most an -UPSTREAM error naming its own
// connection, then the end of the connection, within replyDeadline. Anything else
// (a reply from a fresh connection that silently lost the session's state)
// fails.
func expectToldAndClosed(t *testing.T, name string, r *raw) (told bool) {
	t.Helper()
	start := time.Now()
	for {
		got, err := r.readErr(replyDeadline)
		if err != nil {
			if err == io.EOF || isReset(err) {
				t.Logf("%s: closed after %v (error reply first: %v)", name, time.Since(start).Round(time.Millisecond), told)
				return told
			}
			t.Fatalf("%s: not closed within %v: %v", name, replyDeadline, err)
		}
		if !strings.HasPrefix(got, "-UPSTREAM lockproxy lost this client's own connection") {
			t.Fatalf("%s: got %q, want an -UPSTREAM error about its own connection, then EOF", name, got)
		}
		told = true
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func TestFaultValkeyRestartMidTraffic(t *testing.T) {
	e := newEnv(t, faultOptions())
	d := openDedicated(t, e)
	var st trafficStats
	stop := runTraffic(t, e.addr, 12, 10, &st)
	time.Sleep(300 * time.Millisecond)
	e.srv.Restart(t)
	restarted := time.Now()
	st.mu.Lock()
	st.recovered = restarted.Add(settle)
	st.mu.Unlock()
	// The transaction's EXEC must not reach a fresh connection (it would
	// answer "EXEC without MULTI"): the session is closed instead.
	_, _ = d.multi.nc.Write(redisCmd("EXEC"))
	expectToldAndClosed(t, "MULTI session", d.multi)
	subReply, _ := d.sub.readErr(replyDeadline)
	mustContain(t, subReply, "-UPSTREAM lockproxy lost this client's own connection")
	expectToldAndClosed(t, "subscriber", d.sub)
	if !expectToldAndClosed(t, "BLPOP session", d.blpop) {
		t.Fatal("BLPOP session: closed without the -UPSTREAM error for its pending BLPOP")
	}
	time.Sleep(time.Until(st.recovered) + time.Second)
	stop()
	reportTraffic(t, &st, restarted)
}

func TestFaultValkeyKilledMidTraffic(t *testing.T) {
	e := newEnv(t, faultOptions())
	d := openDedicated(t, e)
	var st trafficStats
	stop := runTraffic(t, e.addr, 12, 10, &st)
	time.Sleep(300 * time.Millisecond)
	e.srv.Stop() // SIGKILL: Valkey is gone for 700 ms
	killed := time.Now()
	if !expectToldAndClosed(t, "BLPOP session", d.blpop) {
		t.Fatal("BLPOP session: closed without the -UPSTREAM error for its pending BLPOP")
	}
	subReply, _ := d.sub.readErr(replyDeadline)
	mustContain(t, subReply, "-UPSTREAM lockproxy lost this client's own connection")
	expectToldAndClosed(t, "subscriber", d.sub)
	_, _ = d.multi.nc.Write(redisCmd("EXEC"))
	expectToldAndClosed(t, "MULTI session", d.multi)
	time.Sleep(700*time.Millisecond - time.Since(killed))
	e.srv.Restart(t)
	st.mu.Lock()
	st.recovered = time.Now().Add(settle)
	st.mu.Unlock()
	time.Sleep(time.Until(st.recovered) + time.Second)
	stop()
	reportTraffic(t, &st, killed)
	// The new connections work for newcomers too.
	eq(t, dialRaw(t, e.addr).do("PING"), "+PONG\r\n")
}

func TestFaultValkeyPausedMidTraffic(t *testing.T) {
	e := newEnv(t, faultOptions())
	d := openDedicated(t, e)
	var st trafficStats
	stop := runTraffic(t, e.addr, 12, 10, &st)
	time.Sleep(300 * time.Millisecond)
	resume := stopServer(t, e.srv)
	paused := time.Now()
	// A paused Valkey does not close connections: the MULTI session learns
	// of the hang from the reply timeout on its next command, is told, and
	// is closed. Valkey stays paused until after that, so without the reply
	// timeout no answer would come at all.
	sent := time.Now()
	d.multi.send(string(redisCmd("INCR", "tx")))
	got, err := d.multi.readErr(replyDeadline)
	if err != nil {
		t.Fatalf("MULTI session: no reply while Valkey is paused: %v", err)
	}
	waited := time.Since(sent)
	mustContain(t, got, "-UPSTREAM lockproxy lost this client's own connection")
	mustContain(t, got, "reply_timeout")
	t.Logf("MULTI session's command answered %v after it was sent (reply_timeout %v)", waited.Round(time.Millisecond), faultReplyTimeout)
	expectToldAndClosed(t, "MULTI session", d.multi)
	time.Sleep(time.Second - time.Since(paused))
	resume()
	st.mu.Lock()
	st.recovered = time.Now().Add(settle)
	st.mu.Unlock()
	time.Sleep(time.Until(st.recovered) + time.Second)
	stop()
	reportTraffic(t, &st, paused)
	// The subscriber and the blocked BLPOP asked to wait: a pause is not a
	// lost connection, and they carry on once Valkey resumes.
	eq(t, e.direct().Publish(ctx, "news", "after").Val(), int64(1))
	eq(t, d.sub.read(), "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nafter\r\n")
	e.direct().RPush(ctx, "never", "x")
	eq(t, d.blpop.read(), "*2\r\n"+bulk("never")+bulk("x"))
}

func reportTraffic(t *testing.T, st *trafficStats, fault time.Time) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Logf("replies: %d correct, %d -UPSTREAM errors, 0 misrouted; longest wait for a reply %v (reply_timeout %v); last error %v after the fault; e.g. %q",
		st.ok, st.errs, st.maxWait.Round(time.Millisecond), faultReplyTimeout, st.lastErr.Sub(fault).Round(time.Millisecond), st.errSamples)
	if st.errs == 0 {
		t.Error("no client saw an -UPSTREAM error: the fault did not hit the traffic")
	}
	if st.lastErr.After(st.recovered) {
		t.Errorf("errors went on %v after Valkey was back", st.lastErr.Sub(st.recovered))
	}
	for c := 0; c < 12; c++ {
		if st.okAfter[c] == 0 {
			t.Errorf("client %d: no correct reply after Valkey was back", c)
		}
	}
}

// The reply timeout counts from the first command left waiting: a steady
// stream of new commands from other clients on the same upstream connection
// must not postpone it, or a client waits as long as others keep sending.
// The pusher keeps sending until the victim has its answer (or for
// replyDeadline): the victim must be answered while the stream goes on.
func TestFaultReplyTimeoutNotPostponedByTraffic(t *testing.T) {
	opts := faultOptions()
	opts.Upstream.PoolSize = 1 // everybody shares one upstream connection
	e := newEnv(t, opts)
	victim, pusher := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, victim.do("PING"), "+PONG\r\n")
	eq(t, pusher.do("PING"), "+PONG\r\n")
	// Valkey stays stopped until the test ends.
	stopServer(t, e.srv)
	answered := make(chan struct{})
	var pushed atomic.Int64
	var gaveUp atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for start := time.Now(); ; {
			select {
			case <-answered:
				return
			default:
			}
			if time.Since(start) > replyDeadline {
				gaveUp.Store(true)
				return
			}
			if _, err := pusher.nc.Write(redisCmd("ECHO", fmt.Sprint(pushed.Load()))); err != nil {
				return
			}
			pushed.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for pushed.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	sent := time.Now()
	victim.send(string(redisCmd("GET", "k")))
	got, err := victim.readErr(2 * replyDeadline)
	waited := time.Since(sent)
	close(answered)
	wg.Wait()
	if err != nil {
		t.Fatalf("victim: no reply: %v", err)
	}
	mustContain(t, got, "-UPSTREAM")
	t.Logf("victim answered after %v while another client kept sending (%d commands; reply_timeout %v)", waited.Round(time.Millisecond), pushed.Load(), faultReplyTimeout)
	if gaveUp.Load() {
		t.Fatalf("victim answered only after the other client stopped sending (%v): its commands postponed reply_timeout (%v)", waited, faultReplyTimeout)
	}
}

// A blocking command waits as long as it asked, not reply_timeout: BLPOP 1
// with a 300 ms reply timeout returns nil after about a second.
func TestFaultBlockingCommandOutlivesReplyTimeout(t *testing.T) {
	e := newEnv(t, faultOptions())
	r := dialRaw(t, e.addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"BLPOP", "empty", "1"}, "*-1\r\n"},
		{[]string{"BRPOP", "empty", "0.8"}, "*-1\r\n"},
		{[]string{"XREAD", "BLOCK", "700", "STREAMS", "nostream", "$"}, "*-1\r\n"},
	} {
		start := time.Now()
		got := r.do(tc.args...)
		took := time.Since(start)
		eq(t, got, tc.want)
		t.Logf("%s answered %q after %v (reply_timeout %v)", strings.Join(tc.args, " "), strings.TrimSpace(got), took.Round(time.Millisecond), faultReplyTimeout)
		if took < 600*time.Millisecond {
			t.Fatalf("%v came back after %v: it did not wait as asked", tc.args, took)
		}
	}
	eq(t, r.do("PING"), "+PONG\r\n") // the same session goes on
}

// A blocking command sent to a paused Valkey is bounded too: by the time it
// asked to wait plus reply_timeout, not by how long Valkey stays paused
// (here: until the test ends).
func TestFaultBlockingCommandOnPausedValkey(t *testing.T) {
	e := newEnv(t, faultOptions())
	r := dialRaw(t, e.addr)
	eq(t, r.do("BLPOP", "empty", "0.1"), "*-1\r\n") // the session has its own connection now
	// Valkey stays stopped until the test ends.
	stopServer(t, e.srv)
	start := time.Now()
	r.send(string(redisCmd("BLPOP", "empty", "1")))
	got, err := r.readErr(replyDeadline)
	took := time.Since(start)
	t.Logf("BLPOP 1 to a paused Valkey: %q %v after %v", got, err, took.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("BLPOP 1 sent to a paused Valkey hung for %v (asked 1 s, reply_timeout %v): Valkey stays paused, so only the proxy's bound can answer it", took, faultReplyTimeout)
	}
	mustContain(t, got, "-UPSTREAM")
}

// A lock held across a Valkey restart (with persistence) still refuses a
// stranger's blind DEL, and its holder still releases it: the proxy keeps
// the grant, and reloads its release script into the new Valkey (NOSCRIPT,
// then EVAL).
func TestFaultLockSurvivesValkeyRestart(t *testing.T) {
	opts := rulesOptions(t, rule("rewrite"))
	fo := faultOptions()
	u, fu := &opts.Upstream, fo.Upstream
	u.ReplyTimeout, u.ReconnectBackoff, u.MaxBackoff = fu.ReplyTimeout, fu.ReconnectBackoff, fu.MaxBackoff
	e := newEnv(t, opts, "appendonly yes", "appendfsync always")
	holder, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", "job:lock", "holder-token", "NX", "PX", "30000"), "+OK\r\n")
	// Warm the release script into Valkey's cache, on another lock.
	eq(t, holder.do("SET", "warm:lock", "w", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, holder.do("DEL", "warm:lock"), ":1\r\n")

	e.srv.Restart(t)
	eq(t, e.direct().Get(ctx, "job:lock").Val(), "holder-token") // persisted
	eq(t, cachedScripts(t, e), 0)                                // the new Valkey knows no script

	got := retryUpstream(t, stranger, "DEL", "job:lock")
	mustContain(t, got, "-NOTOWNER")
	got = retryUpstream(t, stranger, "UNLINK", "job:lock")
	mustContain(t, got, "-NOTOWNER")
	eq(t, e.direct().Get(ctx, "job:lock").Val(), "holder-token")
	eq(t, retryUpstream(t, holder, "DEL", "job:lock"), ":1\r\n") // token-checked, after NOSCRIPT
	eq(t, e.direct().Exists(ctx, "job:lock").Val(), int64(0))
	if n := cachedScripts(t, e); n == 0 {
		t.Fatal("the proxy did not load its release script into the restarted Valkey")
	}
}

// cachedScripts reads number_of_cached_scripts from Valkey's INFO memory.
func cachedScripts(t *testing.T, e *env) int {
	t.Helper()
	info := e.direct().Info(ctx, "memory").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "number_of_cached_scripts:"); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	t.Fatalf("no number_of_cached_scripts in INFO memory:\n%s", info)
	return 0
}

// While Valkey is down, the proxy answers each command at once with the last
// dial error and redials only when the backoff (doubling, capped) has passed;
// when Valkey is back, service resumes. What is asserted is the schedule the
// proxy logs and what each command saw, not how long things took: the
// dials' spacing is a lower bound (a loaded machine only spreads them out).
func TestFaultReconnectBackoff(t *testing.T) {
	lc := &logRecorder{msg: "cannot open a shared upstream connection", attr: "retry_in"}
	opts := proxy.Options{Config: config.Config{Upstream: config.UpstreamConfig{PoolSize: 1, ReconnectBackoff: config.Duration(50 * time.Millisecond), MaxBackoff: config.Duration(400 * time.Millisecond), ReplyTimeout: config.Duration(faultReplyTimeout)}}, Logger: slog.New(lc)}
	e := newEnv(t, opts)
	r := dialRaw(t, e.addr)
	eq(t, r.do("PING"), "+PONG\r\n")
	dials := func() int { lc.mu.Lock(); defer lc.mu.Unlock(); return lc.n }
	e.srv.Stop()
	down := time.Now()
	const wantDials = 6 // 50, 100, 200, 400 and 400 ms apart: the cap is reached and kept
	var cmds, withoutDial int
	for dials() < wantDials {
		if time.Since(down) > replyDeadline {
			t.Fatalf("only %d dials in %v of downtime", dials(), replyDeadline)
		}
		before := dials()
		got, err := r.readErrDo(replyDeadline, "PING")
		if err != nil {
			t.Fatalf("a command while Valkey was down: no reply: %v", err)
		}
		mustContain(t, got, "-UPSTREAM")
		cmds++
		if dials() == before {
			withoutDial++
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(down)
	lc.mu.Lock()
	waits := append([]string(nil), lc.vals...)
	lc.mu.Unlock()
	t.Logf("Valkey down %v: %d commands answered with -UPSTREAM (%d with no dial during them), %d dials, backoffs %v",
		elapsed.Round(time.Millisecond), cmds, withoutDial, len(waits), waits)
	want := []string{"50ms", "100ms", "200ms", "400ms", "400ms"}
	if len(waits) < len(want) || !slices.Equal(waits[:len(want)], want) {
		t.Fatalf("backoffs %v, want %v ...", waits, want)
	}
	// The n-th dial waits for the backoffs before it: dialling sooner
	// would ignore them.
	if min := 1150 * time.Millisecond; elapsed < min {
		t.Fatalf("%d dials within %v: the backoffs (%v) add up to %v", wantDials, elapsed, want, min)
	}
	// Commands get the last error without a dial of their own.
	if withoutDial <= wantDials {
		t.Fatalf("only %d of %d commands were answered without a dial: commands wait for dials instead of getting the last error at once", withoutDial, cmds)
	}
	e.srv.Restart(t)
	back := time.Now()
	for {
		got, err := r.readErrDo(replyDeadline, "PING")
		if err != nil {
			t.Fatalf("after Valkey's return: no reply: %v", err)
		}
		if got == "+PONG\r\n" {
			break
		}
		mustContain(t, got, "-UPSTREAM")
		if time.Since(back) > replyDeadline {
			t.Fatalf("no reconnect within %v of Valkey's return", replyDeadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("service back %v after Valkey answered again (max_backoff 400ms)", time.Since(back).Round(time.Millisecond))
	// Every dial is counted for the reconnect-storm alert: the first and
	// the reconnect succeeded, each logged failure is one error.
	lc.mu.Lock()
	failed := lc.n
	lc.mu.Unlock()
	m := metrics(t, e)
	eq(t, metric(t, m, `lockproxy_upstream_dials_total{result="ok"}`), 2.0)
	eq(t, metric(t, m, `lockproxy_upstream_dials_total{result="error"}`), float64(failed))
}
