package e2e_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// The end-to-end tests of issue 16: what a client sees through lockproxy is
// what Valkey itself does.

// A script that never ends is killed by SCRIPT KILL from another client, as
// it is directly, while a third client keeps working once it has. The
// script's client and the killer share one upstream connection (pool size
// 1): the kill must still reach Valkey at once, not queue behind the script.
func TestBusyScriptKill(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Upstream.PoolSize = 1
		opts := rulesOptions(t, rule("rewrite"))
		opts.Upstream.PoolSize, opts.EventLoops, opts.BusyPoll = 1, o.EventLoops, o.BusyPoll
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
		o.Upstream.PoolSize = 1
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

// valkey-cli --rdb reads a full resynchronisation through the proxy: after
// +FULLRESYNC, the RDB payload has no CRLF after it, and the connection is
// a byte pipe from then on.
func TestSyncRDBThroughProxy(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o, "repl-diskless-sync-delay 0")
		d := e.direct()
		for i := 0; i < 100; i++ {
			if err := d.Set(ctx, fmt.Sprintf("synckey:%d", i), strings.Repeat("v", i*10), 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		eq(t, d.Do(ctx, "FUNCTION", "LOAD", "REPLACE", "#!lua name=synclib\nredis.register_function('syncfn', function() return 1 end)").Val(), "synclib")
		host, port, _ := net.SplitHostPort(e.addr)
		for _, flag := range []string{"--rdb", "--functions-rdb"} {
			file := filepath.Join(t.TempDir(), "dump.rdb")
			out, err := exec.Command("valkey-cli", "-h", host, "-p", port, flag, file).CombinedOutput()
			if err != nil {
				t.Fatalf("valkey-cli %s: %v\n%s", flag, err, out)
			}
			rdb, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(rdb, []byte("REDIS")) && !bytes.HasPrefix(rdb, []byte("VALKEY")) {
				t.Fatalf("%s: not an RDB file: %.40q", flag, rdb)
			}
			if !bytes.Contains(rdb, []byte("synclib")) {
				t.Fatalf("%s: the function library is not in the RDB", flag)
			}
			if has := bytes.Contains(rdb, []byte("synckey:99")); has != (flag == "--rdb") {
				t.Fatalf("%s: keys in the RDB: %v", flag, has)
			}
		}
		// A replica's view: after the RDB, the commands Valkey propagates
		// arrive on the same connection, and the replica's REPLCONF ACKs
		// go up it.
		r := dialRaw(t, e.addr)
		r.send("PSYNC ? -1\r\n")
		var got []byte
		chunk := make([]byte, 4096)
		_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		for !bytes.Contains(got, []byte("\r\n$5\r\nafter\r\n")) {
			n, err := r.nc.Read(chunk)
			got = append(got, chunk[:n]...)
			if err != nil {
				t.Fatalf("replication stream: %v (read %q)", err, got)
			}
			if bytes.Contains(got, []byte("synclib")) && !bytes.Contains(got, []byte("pipekey")) {
				r.send(string(redisCmd("REPLCONF", "ACK", "0")))
				if err := d.Set(ctx, "pipekey", "after", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !bytes.HasPrefix(got, []byte("+FULLRESYNC ")) {
			t.Fatalf("PSYNC: %.60q", got)
		}
		eq(t, dialRaw(t, e.addr).do("PING"), "+PONG\r\n")
	})
}

// A client that half-closes its connection (shutdown(SHUT_WR)) right after
// its commands still receives every reply, as from Valkey, then the end of
// the stream.
func TestHalfCloseGetsEveryReply(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		for _, tc := range []struct {
			name string
			cmds []string // each a whole command, inline
			want []string // the replies, each a prefix
		}{
			{"pipeline", nil, nil},
			{"multi", []string{"MULTI"}, []string{"+OK"}},
			{"subscribe", []string{"SUBSCRIBE half"}, []string{"*3\r\n$9\r\nsubscribe\r\n$4\r\nhalf\r\n:1\r\n"}},
			{"client-id", []string{"CLIENT ID"}, []string{":"}},
			{"set-then-blpop", []string{"SET halfk v", "BLPOP halfl 0"}, []string{"+OK"}},
		} {
			if tc.name == "pipeline" {
				for i := 1; i <= 100; i++ {
					tc.cmds = append(tc.cmds, "INCR halfctr")
					tc.want = append(tc.want, fmt.Sprintf(":%d\r\n", i))
				}
			}
			t.Run(tc.name, func(t *testing.T) {
				for round := 0; round < 10; round++ {
					e.direct().Del(ctx, "halfctr")
					r := dialRaw(t, e.addr)
					r.send(strings.Join(tc.cmds, "\r\n") + "\r\n")
					if err := r.nc.(*net.TCPConn).CloseWrite(); err != nil {
						t.Fatal(err)
					}
					_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
					all, err := io.ReadAll(r.nc)
					if err != nil {
						t.Fatalf("round %d: %v after %q", round, err, all)
					}
					rest := string(all)
					for i, w := range tc.want {
						if !strings.HasPrefix(rest, w) {
							t.Fatalf("round %d: reply %d: want %q, have %.80q", round, i, w, rest)
						}
						r.buf, r.f = []byte(rest), resp.Framer{}
						rest = rest[len(r.read()):]
					}
					if rest != "" {
						t.Fatalf("round %d: more than the replies owed: %.80q", round, rest)
					}
				}
			})
		}
	})
}

// RESET clears the client name as Valkey does, on a shared or a dedicated
// connection, and with it the ownership the name gave (session:
// client_name): the connection no longer owns what it acquired under the
// name, while a client that takes the name does.
func TestResetClearsNameOwner(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		opts := rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n    session: client_name\n    unknown_owner: refuse\n")
		opts.EventLoops, opts.BusyPoll = o.EventLoops, o.BusyPoll
		e := newEnv(t, opts)
		for _, dedicated := range []bool{false, true} {
			a := dialRaw(t, e.addr)
			eq(t, a.do("CLIENT", "SETNAME", "worker-a"), "+OK\r\n")
			if dedicated {
				eq(t, a.do("WATCH", "w"), "+OK\r\n")
			}
			eq(t, a.do("SET", "r:lock", "abc", "NX", "PX", "30000"), "+OK\r\n")
			eq(t, a.do("RESET"), "+RESET\r\n")
			eq(t, a.do("CLIENT", "GETNAME"), "$-1\r\n")
			mustContain(t, a.do("DEL", "r:lock"), "-NOTOWNER")
			eq(t, e.direct().Get(ctx, "r:lock").Val(), "abc")
			b := dialRaw(t, e.addr)
			eq(t, b.do("CLIENT", "SETNAME", "worker-a"), "+OK\r\n")
			eq(t, b.do("DEL", "r:lock"), ":1\r\n")
		}
	})
}

// RESET also ends a LOCKPROXY AUTH admin login.
func TestResetEndsAdminLogin(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Admin.Password = "s3cret"
		e := newEnv(t, o)
		r := dialRaw(t, e.addr)
		eq(t, r.do("LOCKPROXY", "AUTH", "s3cret"), "+OK\r\n")
		if got := r.do("LOCKPROXY", "STATS"); strings.HasPrefix(got, "-") {
			t.Fatalf("LOCKPROXY STATS after AUTH: %q", got)
		}
		eq(t, r.do("RESET"), "+RESET\r\n")
		mustContain(t, r.do("LOCKPROXY", "STATS"), "-NOAUTH")
	})
}

// CLIENT ID, KILL and LIST are about the proxy's own clients: CLIENT KILL ID
// closes exactly the client with that id, CLIENT KILL TYPE normal closes the
// proxy's other clients and no upstream connection, and the killer goes on.
func TestClientKillClosesProxyClients(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Upstream.PoolSize = 1
		e := newEnv(t, o)
		a, b, killer := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
		for _, r := range []*raw{a, b, killer} {
			eq(t, r.do("PING"), "+PONG\r\n") // the shared upstream connection, dialled
		}
		eq(t, b.do("CLIENT", "SETNAME", "bee"), "+OK\r\n")
		id := strings.TrimSpace(a.do("CLIENT", "ID")[1:])
		mustContain(t, killer.do("CLIENT", "LIST", "ID", id), "id="+id+" addr="+a.nc.LocalAddr().String()+" ")
		d := e.direct()
		upstream := len(strings.Split(strings.TrimSpace(d.ClientList(ctx).Val()), "\n"))
		eq(t, killer.do("CLIENT", "KILL", "ID", id), ":1\r\n")
		a.expectClosed()
		eq(t, b.do("PING"), "+PONG\r\n")
		eq(t, killer.do("CLIENT", "KILL", "ADDR", b.nc.LocalAddr().String(), "TYPE", "pubsub"), ":0\r\n")
		eq(t, killer.do("CLIENT", "KILL", "TYPE", "normal"), ":1\r\n")
		b.expectClosed()
		eq(t, killer.do("PING"), "+PONG\r\n")
		// The proxy's upstream connections are all still there (the
		// direct client's own connection is counted both times).
		eq(t, len(strings.Split(strings.TrimSpace(d.ClientList(ctx).Val()), "\n")), upstream)
		eq(t, killer.do("CLIENT", "KILL", killer.nc.LocalAddr().String()), "+OK\r\n")
		killer.expectClosed()
	})
}

// When Valkey drops a client's dedicated connection, the client is told with
// an error reply before the proxy closes it, even with nothing in flight.
func TestDedicatedLostIsTold(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		r := dialRaw(t, e.addr)
		eq(t, r.do("WATCH", "lostkey"), "+OK\r\n") // a dedicated connection
		d := e.direct()
		var victim string
		for _, line := range strings.Split(d.ClientList(ctx).Val(), "\n") {
			if strings.Contains(line, " cmd=watch ") {
				victim = strings.TrimPrefix(strings.Fields(line)[0], "id=")
			}
		}
		if victim == "" {
			t.Fatal("no upstream connection ran the WATCH")
		}
		eq(t, d.Do(ctx, "CLIENT", "KILL", "ID", victim).Val(), int64(1))
		mustContain(t, r.read(), "-UPSTREAM lockproxy lost this client's own connection")
		r.expectClosed()
	})
}

// A long command (DEBUG SLEEP here; SAVE, FLUSHALL SYNC and DEBUG RELOAD
// behave alike) holds Valkey past reply_timeout: its reply still comes. And
// while Valkey is held, a client that needs a new upstream connection gets
// one once Valkey answers (within reply_timeout, as any reply), however short
// dial_timeout is: Valkey is there, only busy.
func TestLongCommandIsNotUnreachable(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Upstream.ReplyTimeout = config.Duration(300 * time.Millisecond)
		e := newEnv(t, o, "enable-debug-command yes")
		a := dialRaw(t, e.addr)
		eq(t, a.do("DEBUG", "SLEEP", "1"), "+OK\r\n")
		eq(t, a.do("FLUSHALL", "SYNC"), "+OK\r\n")
		eq(t, a.do("PING"), "+PONG\r\n")

		o.Upstream.ReplyTimeout, o.Upstream.DialTimeout = config.Duration(10*time.Second), config.Duration(200*time.Millisecond)
		e = newEnv(t, o, "enable-debug-command yes")
		direct := dialRaw(t, e.srv.Addr)
		direct.send(string(redisCmd("DEBUG", "SLEEP", "1")))
		time.Sleep(100 * time.Millisecond) // not asserted: lets the sleep begin
		b := dialRaw(t, e.addr)
		eq(t, b.do("MULTI"), "+OK\r\n") // a dedicated connection, dialled now
		eq(t, direct.read(), "+OK\r\n")
		eq(t, b.do("EXEC"), "*0\r\n")
	})
}

// SELECT of a database Valkey does not have is Valkey's error each time, and
// not a dial failure the proxy logs and remembers.
func TestSelectOutOfRangeIsNotADialFailure(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		r := dialRaw(t, e.addr)
		for i := 0; i < 3; i++ {
			mustContain(t, r.do("SELECT", "99999"), "-ERR DB index is out of range")
		}
		eq(t, r.do("SET", "k", "v"), "+OK\r\n")
		mustContain(t, r.do("INFO", "lockproxy"), "\r\nlog_warnings:0\r\n")
	})
}

// WAIT in front of one primary counts the replicas that acknowledged the
// session's own writes, as Valkey does for a client: with the replica
// stopped, a write is not acknowledged, so WAIT says 0 after its timeout,
// the first WAIT of the session included (its writes went over shared
// connections, the WAIT over a new one of its own that wrote nothing);
// with the replica running again, 1. Later writes and WAITs too.
func TestWaitCountsTheSessionsWrites(t *testing.T) {
	primary, replica := primaryWithReplica(t)
	e := &env{t: t, srv: primary}
	e.startProxy(rulesOptions(t, rule("rewrite")))
	c := dialRaw(t, e.addr)
	eq(t, c.do("SET", "w", "1"), "+OK\r\n")
	// The key the prime writes is lockproxy's: a client's would be deleted.
	mustContain(t, c.do("SET", "{wait}:lockproxy:wait", "mine"), "-LOCKED lockproxy refused SET on \"{wait}:lockproxy:wait\": it is one of lockproxy's own keys")
	// The replica has every write so far (a direct client's WAIT after a
	// write of its own), then stops acknowledging.
	if out, err := valkeytest.Do(primary.Addr, "WAIT", "1", "5000"); err != nil || out != "1\n" {
		t.Fatalf("direct WAIT: %q %v", out, err)
	}
	for round := range 3 {
		var got string
		whileStopped(t, replica, func() {
			eq(t, c.do("SET", "w", strconv.Itoa(round+2)), "+OK\r\n")
			got = c.do("WAIT", "1", "300")
		})
		if got != ":0\r\n" {
			t.Errorf("round %d: WAIT 1 300 with the replica stopped: %q, want :0 (the write was not acknowledged)", round, got)
		}
		eq(t, c.do("WAIT", "1", "5000"), ":1\r\n")
	}
	eq(t, c.do("GET", "w"), bulk("4"))
}

// A client logged in as a user who may not write lockproxy's WAIT key gets
// an error that says so from WAIT, not a count that ignores its writes; a
// user allowed it gets Valkey's count.
func TestWaitRestrictedUser(t *testing.T) {
	primary, replica := primaryWithReplica(t,
		"user narrow on >npw ~n:* +@all", "user wide on >wpw ~n:* ~*:lockproxy:wait +@all")
	e := &env{t: t, srv: primary}
	e.startProxy(proxy.Options{})
	narrow, wide := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, narrow.do("AUTH", "narrow", "npw"), "+OK\r\n")
	eq(t, wide.do("AUTH", "wide", "wpw"), "+OK\r\n")
	if out, err := valkeytest.Do(primary.Addr, "WAIT", "1", "5000"); err != nil || out != "1\n" {
		t.Fatalf("direct WAIT: %q %v", out, err)
	}
	var gotNarrow, gotWide string
	whileStopped(t, replica, func() {
		eq(t, narrow.do("SET", "n:1", "v"), "+OK\r\n")
		eq(t, wide.do("SET", "n:2", "v"), "+OK\r\n")
		gotNarrow = narrow.do("WAIT", "1", "200")
		gotWide = wide.do("WAIT", "1", "200")
	})
	mustContain(t, gotNarrow, "-ERR lockproxy could not make WAIT count this client's writes")
	eq(t, gotWide, ":0\r\n")
	eq(t, wide.do("WAIT", "1", "5000"), ":1\r\n")
}
