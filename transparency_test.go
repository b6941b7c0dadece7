package lockproxy_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/proxy"
)

// The end-to-end tests of issue 16: what a client sees through lockproxy is
// what Valkey itself does.

// A script that never ends is killed by SCRIPT KILL from another client, as
// it is directly, while a third client keeps working once it has. The
// script's client and the killer share one upstream connection (pool size
// 1): the kill must still reach Valkey at once, not queue behind the script.
func TestBusyScriptKill(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.PoolSize = 1
		opts := rulesOptions(t, rule("rewrite"))
		opts.PoolSize, opts.EventLoops, opts.BusyPoll = 1, o.EventLoops, o.BusyPoll
		e := newEnv(t, opts, "busy-reply-threshold 50")
		for _, tc := range []struct{ name, start, kill string }{
			{"eval", "EVAL", "SCRIPT"},
			{"fcall", "FCALL", "FUNCTION"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				third := dialRaw(t, e.addr)
				eq(t, third.do("SET", "third", "before"), "+OK\r\n")
				runner := dialRaw(t, e.addr)
				if tc.start == "FCALL" {
					eq(t, runner.do("FUNCTION", "LOAD", "REPLACE", "#!lua name=spin\nredis.register_function('spin', function() while true do end end)"), bulk("spin"))
					runner.send(string(redisCmd("FCALL", "spin", "0")))
				} else {
					runner.send(string(redisCmd("EVAL", "while true do end", "0")))
				}
				// The third client's command, on the script's upstream
				// connection, waits behind the script (directly it would
				// get BUSY); it is answered once the script is killed.
				third.send(string(redisCmd("GET", "third")))
				killer := dialRaw(t, e.addr)
				// Poll until the kill lands: before the script has started,
				// Valkey answers NOTBUSY.
				deadline := time.Now().Add(60 * time.Second)
				for {
					got := killer.do(tc.kill, "KILL")
					if got == "+OK\r\n" {
						break
					}
					if !strings.HasPrefix(got, "-NOTBUSY") || time.Now().After(deadline) {
						t.Fatalf("%s KILL: %q", tc.kill, got)
					}
					time.Sleep(20 * time.Millisecond)
				}
				mustContain(t, runner.read(), "-ERR Script killed by user with ")
				if got := third.read(); got != bulk("before") && !strings.HasPrefix(got, "-BUSY") {
					t.Fatalf("third client's GET during the script: %q", got)
				}
				eq(t, third.do("GET", "third"), bulk("before"))
				eq(t, runner.do("PING"), "+PONG\r\n")
			})
		}
	})
}

// SHUTDOWN NOSAVE reaches a busy Valkey at once, and the client that sent it
// is closed as Valkey closes it.
func TestBusyScriptShutdownNoSave(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.PoolSize = 1
		e := newEnv(t, o, "busy-reply-threshold 50")
		runner := dialRaw(t, e.addr)
		runner.send(string(redisCmd("EVAL", "while true do end", "0")))
		killer := dialRaw(t, e.addr)
		deadline := time.Now().Add(60 * time.Second)
		for {
			// Before the script runs SHUTDOWN NOSAVE would succeed as well:
			// wait until FUNCTION STATS (also sent on a connection of its
			// own) is answered BUSY.
			got := killer.do("FUNCTION", "STATS")
			if strings.HasPrefix(got, "-BUSY") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Valkey never got busy: FUNCTION STATS answers %q", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
		killer.send(string(redisCmd("SHUTDOWN", "NOSAVE")))
		killer.expectClosed()
		mustContain(t, runner.read(), "-UPSTREAM")
		if err := e.srv.Process().Signal(syscall.Signal(0)); err == nil {
			_, _ = e.srv.Process().Wait()
		}
	})
}
