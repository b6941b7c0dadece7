package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/proxy"
)

// While one client's script runs past busy-reply-threshold, another client
// whose commands share its upstream connection (pool_size 1) gets Valkey's
// BUSY at once, as it would on a connection of its own, instead of waiting
// behind the script; it can then kill the script, and afterwards both are
// served on the shared connection again, in order. Before the fix the PING
// waited behind the script until reply_timeout.
func TestBusyScriptOthersGetBusy(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		o.Upstream.PoolSize = 1
		e := newEnv(t, o)
		d := e.direct()
		eq(t, d.ConfigSet(ctx, "busy-reply-threshold", "10").Val(), "OK")
		t.Cleanup(func() { // a failed test's script must not outlive it
			d.Do(ctx, "SCRIPT", "KILL")
			d.Do(ctx, "FUNCTION", "KILL")
		})

		for _, call := range [][]string{
			{"EVAL", "while true do end", "0"},
			{"FCALL", "spin", "0"},
		} {
			runner, other := dialRaw(t, e.addr), dialRaw(t, e.addr)
			if call[0] == "FCALL" {
				mustContain(t, runner.do("FUNCTION", "LOAD", "REPLACE",
					"#!lua name=spinlib\nredis.register_function('spin', function() while true do end end)"), "spinlib")
			}
			eq(t, other.do("SET", "k", "before"), "+OK\r\n")
			runner.send(string(redisCmd(call...)))
			// Valkey answers BUSY once the script is past the threshold;
			// before that it reads nothing, and the PING waits. A PING
			// that reached Valkey before the script did gets PONG.
			for {
				got, err := other.readErrDo(20*time.Second, "PING")
				if err != nil {
					t.Fatalf("%s: PING beside a running script: %v", call[0], err)
				}
				if got == "+PONG\r\n" {
					continue
				}
				if !strings.HasPrefix(got, "-BUSY ") {
					t.Fatalf("%s: PING beside a running script: %q, want BUSY", call[0], got)
				}
				break
			}
			kill := "SCRIPT"
			if call[0] == "FCALL" {
				kill = "FUNCTION"
			}
			eq(t, other.do(kill, "KILL"), "+OK\r\n")
			mustContain(t, runner.read(), "-ERR Script killed by user")
			// Both pipeline on the one shared connection again, in order.
			runner.send(string(redisCmd("SET", "k", "runner")) + string(redisCmd("GET", "k")))
			eq(t, runner.read(), "+OK\r\n")
			eq(t, runner.read(), bulk("runner"))
			other.send(string(redisCmd("APPEND", "k", "+other")) + string(redisCmd("GET", "k")))
			eq(t, other.read(), ":12\r\n")
			eq(t, other.read(), bulk("runner+other"))
		}
	})
}

// While a CLIENT PAUSE WRITE sent through the proxy holds four clients'
// writes back, a fifth client on the same shared connection (pool_size 1)
// is answered at once, as on Valkey: INFO shows all four held, each as a
// client of its own (no write waits behind another client's, as none would
// on Valkey), and its CLIENT UNPAUSE lets them through, in order. Before
// the fix the INFO waited behind the held write until the pause ended; and
// on goroutines, two clients could take the same spare connection at once,
// so one write waited behind the other's and was never seen held.
func TestPauseHeldWritesOthersAnswered(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		o.Upstream.PoolSize = 1
		e := newEnv(t, o)
		d := e.direct()
		t.Cleanup(func() { d.Do(ctx, "CLIENT", "UNPAUSE") })
		r := dialRaw(t, e.addr)
		w := []*raw{dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)}
		eq(t, r.do("PFADD", "hll", "a"), ":1\r\n")
		eq(t, r.do("CLIENT", "PAUSE", "100000", "WRITE"), "+OK\r\n")
		// Sent together, so that their sessions look for a connection at
		// the same moment.
		w[0].send(string(redisCmd("PFCOUNT", "hll")))
		w[1].send(string(redisCmd("SET", "k", "v")) + string(redisCmd("GET", "k")))
		w[2].send(string(redisCmd("INCR", "n")))
		w[3].send(string(redisCmd("RPUSH", "l", "x")))
		// A wait for the writes to reach Valkey (a loaded machine may be
		// slow to send them), not a timing bound: the limit only ends a
		// test whose writes never arrive.
		for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
			info, err := r.readErrDo(20*time.Second, "INFO", "clients")
			if err != nil {
				t.Fatalf("INFO beside held writes: %v", err)
			}
			if strings.Contains(info, "blocked_clients:4\r\n") {
				break
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("the writes are not held, each on its own: %q\n%s", info, d.Do(ctx, "CLIENT", "LIST").String())
			}
		}
		eq(t, r.do("GET", "k"), "$-1\r\n") // a read the pause lets through
		eq(t, r.do("CLIENT", "UNPAUSE"), "+OK\r\n")
		eq(t, w[0].read(), ":1\r\n")
		eq(t, w[1].read(), "+OK\r\n")
		eq(t, w[1].read(), bulk("v"))
		eq(t, w[2].read(), ":1\r\n")
		eq(t, w[3].read(), ":1\r\n")
		eq(t, r.do("GET", "k"), bulk("v"))
	})
}
