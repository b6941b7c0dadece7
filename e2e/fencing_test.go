package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/proxy"
)

// The seed's readout: the resource has seen 34; a write with 33 is refused,
// 34 is accepted, 35 is accepted and becomes the highest.
func TestFenceSeedReadoutHighest(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("highest", "reject", "key")))
	d := e.direct()
	d.Set(ctx, "{res}:fence", "32", 0) // the next grant is 33
	a, b, c := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "{res}:lock", "a", "NX", "PX", "100"), "+OK\r\n") // token 33
	time.Sleep(150 * time.Millisecond)                                  // A is paused past its lease
	eq(t, b.do("SET", "{res}:lock", "b", "NX", "PX", "100"), "+OK\r\n") // token 34
	eq(t, b.do("SET", "{res}:data", "from-b"), "+OK\r\n")               // the resource has seen 34
	eq(t, d.HGet(ctx, "{res}:fence:high", "{res}:data").Val(), "34")

	got := a.do("SET", "{res}:data", "from-a") // 33 < 34: refused
	mustContain(t, got, "-STALE lockproxy refused a write to {res}:data with fencing token 33: it has already accepted token 34")
	eq(t, d.Get(ctx, "{res}:data").Val(), "from-b") // nothing written

	eq(t, b.do("SET", "{res}:data", "again-b"), "+OK\r\n") // 34 >= 34: accepted
	time.Sleep(150 * time.Millisecond)
	eq(t, c.do("SET", "{res}:lock", "c", "NX", "PX", "10000"), "+OK\r\n") // token 35
	eq(t, c.do("SET", "{res}:data", "from-c"), "+OK\r\n")                 // 35 > 34: accepted
	eq(t, d.HGet(ctx, "{res}:fence:high", "{res}:data").Val(), "35")      // 35 is the highest now
	mustContain(t, b.do("SET", "{res}:data", "late-b"), "-STALE")         // so 34 is refused now
	eq(t, d.Get(ctx, "{res}:fence").Val(), "35")                          // GET counter: the latest grant
	eq(t, b.do("GET", "{res}:data"), bulk("from-c"))                      // reads are never fenced
	found := false
	for _, ev := range e.p.Events(50) {
		found = found || (ev.Outcome == proxy.OutcomeStaleRefused && ev.Key == "{res}:data" && ev.Grant == 33)
	}
	if !found {
		t.Fatalf("no stale_write_refused event for token 33: %+v", e.p.Events(10))
	}
}

// check: current — EchoMQ's form: only the lock's latest grant may write.
func TestFenceCurrent(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "{job}:lock", "a", "NX", "PX", "100"), "+OK\r\n")
	eq(t, a.do("RPUSH", "{job}:items", "1"), ":1\r\n") // the holder writes
	time.Sleep(150 * time.Millisecond)
	eq(t, b.do("SET", "{job}:lock", "b", "NX", "PX", "10000"), "+OK\r\n")
	mustContain(t, a.do("RPUSH", "{job}:items", "2"), "-STALE lockproxy refused a write to {job}:items with fencing token 1: the lock was granted again since, to token 2")
	eq(t, b.do("RPUSH", "{job}:items", "3"), ":2\r\n")
	eq(t, strings.Join(e.direct().LRange(ctx, "{job}:items", 0, -1).Val(), ","), "1,3")
}

func TestUnfencedWrites(t *testing.T) {
	for _, tc := range []struct{ mode, want, stored string }{
		{"reject", "-UNFENCED lockproxy refused SET on \"{u}:data\"", "$-1\r\n"},
		{"allow", "+OK\r\n", bulk("x")},
		{"observe", "+OK\r\n", bulk("x")},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := newEnv(t, rulesOptions(t, fenceRule("current", tc.mode)))
			r := dialRaw(t, e.addr)
			mustContain(t, r.do("SET", "{u}:data", "x"), tc.want)
			eq(t, r.do("GET", "{u}:data"), tc.stored)
			eq(t, r.do("SET", "{u}:other", "x"), "+OK\r\n") // not guarded
			observed := false
			for _, ev := range e.p.Events(10) {
				observed = observed || (ev.Outcome == proxy.OutcomeObserved && ev.Key == "{u}:data")
			}
			eq(t, observed, tc.mode == "observe")
		})
	}
}

// A holder paused past its lease — here a goroutine that sleeps — writes
// after a successor's grant, and is refused under both checks.
func TestPausedHolderGoroutine(t *testing.T) {
	for _, check := range []string{"current", "highest"} {
		t.Run(check, func(t *testing.T) {
			e := newEnv(t, rulesOptions(t, fenceRule(check, "reject")))
			holder, successor := dialRaw(t, e.addr), dialRaw(t, e.addr)
			eq(t, holder.do("SET", "{g}:lock", "h", "NX", "PX", "100"), "+OK\r\n")
			var wg sync.WaitGroup
			var got string
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(300 * time.Millisecond) // the pause
				got = holder.do("SET", "{g}:data", "stale")
			}()
			time.Sleep(150 * time.Millisecond)
			eq(t, successor.do("SET", "{g}:lock", "s", "NX", "PX", "10000"), "+OK\r\n")
			eq(t, successor.do("SET", "{g}:data", "fresh"), "+OK\r\n")
			wg.Wait()
			mustContain(t, got, "-STALE")
			eq(t, e.direct().Get(ctx, "{g}:data").Val(), "fresh")
		})
	}
}

// The same with a separate process stopped by SIGSTOP past its lease and
// resumed with SIGCONT: a real pause, not a sleep the holder chose.
func TestPausedHolderProcess(t *testing.T) {
	for _, check := range []string{"current", "highest"} {
		t.Run(check, func(t *testing.T) {
			e := newEnv(t, rulesOptions(t, fenceRule(check, "reject")))
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "LOCKPROXY_PAUSED_HOLDER="+e.addr)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			out := bufio.NewReader(stdout)
			line, err := out.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "acquired +OK") {
				t.Fatalf("holder process: %q %v", line, err)
			}
			if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond) // past the 200 ms lease
			s := dialRaw(t, e.addr)
			eq(t, s.do("SET", "{p}:lock", "successor", "NX", "PX", "10000"), "+OK\r\n")
			eq(t, s.do("SET", "{p}:data", "successor"), "+OK\r\n")
			stdin.Write([]byte("write\n"))
			if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			line, err = out.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("paused holder's write after SIGCONT: %s", strings.TrimSpace(line))
			mustContain(t, line, "wrote -STALE")
			eq(t, e.direct().Get(ctx, "{p}:data").Val(), "successor")
		})
	}
}

// pausedHolder is the body of the helper process: acquire, report, wait for
// a line on stdin (it is stopped meanwhile), then write and report.
func pausedHolder(addr string) {
	r := dialRaw(&fatalTB{}, addr)
	fmt.Printf("acquired %s", r.do("SET", "{p}:lock", "holder", "NX", "PX", "200"))
	bufio.NewReader(os.Stdin).ReadString('\n')
	reply := r.do("SET", "{p}:data", "holder")
	fmt.Printf("wrote %s\n", strings.TrimSpace(reply))
}

// fatalTB lets the helper process reuse the raw client outside a test.
type fatalTB struct{ testing.TB }

func (fatalTB) Helper()                         {}
func (fatalTB) Fatal(args ...any)               { fmt.Println(args...); os.Exit(1) }
func (fatalTB) Fatalf(f string, args ...any)    { fmt.Printf(f+"\n", args...); os.Exit(1) }
func (fatalTB) Cleanup(func())                  {}
func (fatalTB) Errorf(f string, args ...any)    { fmt.Printf(f+"\n", args...) }
func (fatalTB) Logf(format string, args ...any) {}

// Grant numbers come from a counter in Valkey: they survive a proxy restart.
func TestTokensSurviveProxyRestart(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "{r}:lock", "1", "NX", "PX", "50"), "+OK\r\n")
	eq(t, e.direct().Get(ctx, "{r}:fence").Val(), "1")
	a.nc.Close()
	e.stopProxy()
	e2 := &env{t: t, srv: e.srv}
	e2.startProxy(rulesOptions(t, fenceRule("current", "reject")))
	time.Sleep(60 * time.Millisecond)
	b := dialRaw(t, e2.addr)
	eq(t, b.do("SET", "{r}:lock", "2", "NX", "PX", "5000"), "+OK\r\n")
	eq(t, e.direct().Get(ctx, "{r}:fence").Val(), "2")
}

// Many clients contend for one lock: every grant gets its own number, and
// the counter ends at the number of grants.
func TestTokensMonotonicUnderContention(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	var mu sync.Mutex
	grants := 0
	var wg sync.WaitGroup
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := dialRaw(t, e.addr)
			for i := 0; i < 20; i++ {
				if r.do("SET", "{c}:lock", "t", "NX", "PX", "1000") == "+OK\r\n" {
					mu.Lock()
					grants++
					mu.Unlock()
					// The holder's fenced write passes while it is the latest grant.
					if got := r.do("RPUSH", "{c}:items", "x"); got[0] != ':' {
						t.Errorf("holder's write refused: %q", got)
					}
					eq(t, r.do("DEL", "{c}:lock"), ":1\r\n")
				}
			}
		}()
	}
	wg.Wait()
	eq(t, e.direct().Get(ctx, "{c}:fence").Val(), fmt.Sprint(grants))
}

// EchoMQ's scripts fence on attempts by themselves; they pass through
// lockproxy unchanged and EMQSTALE reaches the client verbatim.
func TestEchoMQScriptsPassThrough(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	const claim = `local jk = KEYS[1]
local att = redis.call('HINCRBY', jk, 'attempts', 1)
redis.call('HSET', jk, 'state', 'active')
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[1])
return {ARGV[1], redis.call('HGET', jk, 'payload'), att}`
	const complete = `local att = redis.call('HGET', KEYS[2], 'attempts')
if not att then return 0 end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE complete token mismatch')
end
redis.call('HSET', KEYS[2], 'state', 'done')
redis.call('ZREM', KEYS[1], ARGV[1])
return 1`
	e.direct().HSet(ctx, "emq:{q}:job:7", "payload", "work")
	w1, w2 := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, w1.do("EVAL", claim, "2", "emq:{q}:job:7", "emq:{q}:active", "7", "1000"), "*3\r\n"+bulk("7")+bulk("work")+":1\r\n")
	// The lease is reaped and the job claimed again: attempts becomes 2.
	eq(t, w2.do("EVAL", claim, "2", "emq:{q}:job:7", "emq:{q}:active", "7", "2000"), "*3\r\n"+bulk("7")+bulk("work")+":2\r\n")
	eq(t, w1.do("EVAL", complete, "2", "emq:{q}:active", "emq:{q}:job:7", "7", "1"), "-EMQSTALE complete token mismatch\r\n")
	eq(t, w2.do("EVAL", complete, "2", "emq:{q}:active", "emq:{q}:job:7", "7", "2"), ":1\r\n")
	eq(t, e.direct().HGet(ctx, "emq:{q}:job:7", "state").Val(), "done")
}

// Inside MULTI/EXEC a fenced write behaves the same: the holder's passes,
// the stale one is refused in its EXEC element and writes nothing.
func TestFenceInsideMulti(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "{m}:lock", "a", "NX", "PX", "100"), "+OK\r\n")
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("SET", "{m}:data", "1"), "+QUEUED\r\n")
	eq(t, a.do("EXEC"), "*1\r\n+OK\r\n")
	time.Sleep(150 * time.Millisecond)
	eq(t, b.do("SET", "{m}:lock", "b", "NX", "PX", "10000"), "+OK\r\n")
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("SET", "{m}:data", "stale"), "+QUEUED\r\n")
	eq(t, a.do("INCR", "counter"), "+QUEUED\r\n")
	got := a.do("EXEC")
	if !strings.HasPrefix(got, "*2\r\n-STALE") || !strings.HasSuffix(got, ":1\r\n") {
		t.Fatalf("EXEC: %q", got)
	}
	eq(t, e.direct().Get(ctx, "{m}:data").Val(), "1")
	// Pipelined, the same.
	a.send(string(redisCmd("SET", "{m}:data", "p1")) + string(redisCmd("SET", "{m}:data", "p2")))
	mustContain(t, a.read(), "-STALE")
	mustContain(t, a.read(), "-STALE")
}
