package e2e_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// The seed's five steps: A acquires with abc, stalls past its lease, B
// acquires with xyz, A releases with a blind DEL.
func seed(t *testing.T, e *env) (a, b *raw) {
	t.Helper()
	a, b = dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "resource:lock", "abc", "NX", "PX", "100"), "+OK\r\n")   // 1. A acquires
	time.Sleep(150 * time.Millisecond)                                         // 2. A stalls; the lease expires
	eq(t, b.do("SET", "resource:lock", "xyz", "NX", "PX", "30000"), "+OK\r\n") // 3. B acquires
	return a, b
}

func TestSeedScenarioRewrite(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a, _ := seed(t, e)
	eq(t, a.do("DEL", "resource:lock"), ":0\r\n") // 4. A releases: a no-op
	eq(t, e.direct().Get(ctx, "resource:lock").Val(), "xyz")
	if !hasEvent(e, proxy.OutcomeSuccessorPrevented, "resource:lock") {
		t.Fatalf("no successor_deletion_prevented event: %+v", e.p.Events(10))
	}
}

func TestSeedScenarioReject(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("reject")))
	a, _ := seed(t, e)
	mustContain(t, a.do("DEL", "resource:lock"), "-TOKENRELEASE lockproxy refused the blind DEL of lock key \"resource:lock\"")
	eq(t, e.direct().Get(ctx, "resource:lock").Val(), "xyz")
	eq(t, a.do("PING"), "+PONG\r\n") // never closed for a refusal
	if !hasEvent(e, proxy.OutcomeRefused, "resource:lock") {
		t.Fatal("no refused event")
	}
}

func TestSeedScenarioObserve(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("observe")))
	a, _ := seed(t, e)
	eq(t, a.do("DEL", "resource:lock"), ":1\r\n") // 5. the wrong lock is gone
	eq(t, e.direct().Exists(ctx, "resource:lock").Val(), int64(0))
	if !hasEvent(e, proxy.OutcomeSuccessorDeleted, "resource:lock") {
		t.Fatalf("no successor_deletion event: %+v", e.p.Events(10))
	}
}

func TestReleaseNormalPath(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a := dialRaw(t, e.addr)
	for _, del := range []string{"DEL", "UNLINK", "del"} {
		eq(t, a.do("SET", "job:lock", "tok-1", "PX", "5000", "NX"), "+OK\r\n")
		eq(t, a.do("SET", "job:lock", "tok-2", "NX", "PX", "5000"), "$-1\r\n") // contention
		eq(t, a.do(del, "job:lock"), ":1\r\n")
		eq(t, e.direct().Exists(ctx, "job:lock").Val(), int64(0))
	}
	// The grant counter never expires and counts the three grants.
	eq(t, e.direct().Get(ctx, "{job:lock}:lockproxy:grants").Val(), "3")
	eq(t, e.direct().TTL(ctx, "{job:lock}:lockproxy:grants").Val(), time.Duration(-1))
}

// SETNX, the acquisition of old clients, is one too: it mints a grant and
// answers :1 or :0 as always.
func TestSetNXAcquires(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SETNX", "old:lock", "t"), ":1\r\n")
	eq(t, b.do("SETNX", "old:lock", "u"), ":0\r\n")
	mustContain(t, b.do("DEL", "old:lock"), "-NOTOWNER")
	eq(t, a.do("DEL", "old:lock"), ":1\r\n")
	eq(t, e.direct().Get(ctx, "{old:lock}:lockproxy:grants").Val(), "1")
}

func TestAcquireRESP3AndOptions(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a := dialRaw(t, e.addr)
	a.do("HELLO", "3")
	eq(t, a.do("set", "r3:lock", "v", "nx", "ex", "5"), "+OK\r\n")
	eq(t, a.do("SET", "r3:lock", "w", "NX", "EX", "5"), "_\r\n")
	at := fmt.Sprint(time.Now().Add(5 * time.Second).UnixMilli())
	eq(t, a.do("SET", "r4:lock", "v", "PXAT", at, "NX"), "+OK\r\n")
	mustContain(t, a.do("SET", "r5:lock", "v", "NX", "XX"), "-ERR syntax error")
	eq(t, a.do("DEL", "r3:lock", "r4:lock"), ":2\r\n")
}

func TestMultiKeyDelete(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a := dialRaw(t, e.addr)
	d := e.direct()
	d.Set(ctx, "plain1", "x", 0)
	d.Set(ctx, "plain2", "x", 0)
	eq(t, a.do("SET", "m:lock", "t", "NX", "PX", "5000"), "+OK\r\n")
	eq(t, a.do("DEL", "plain1", "m:lock", "plain2", "nothere"), ":3\r\n")
	// A lock this client does not hold refuses the whole command: the plain
	// key is not deleted half-way.
	d.Set(ctx, "plain3", "x", 0)
	d.Set(ctx, "other:lock", "theirs", 0)
	mustContain(t, a.do("DEL", "plain3", "other:lock"), "-NOTOWNER lockproxy refused DEL of lock key \"other:lock\"")
	eq(t, d.Exists(ctx, "plain3", "other:lock").Val(), int64(2))
	// Keys that match no rule are never touched.
	eq(t, a.do("DEL", "plain3"), ":1\r\n")
}

func TestLocksInsideMulti(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a := dialRaw(t, e.addr)
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("SET", "tx:lock", "t", "NX", "PX", "5000"), "+QUEUED\r\n")
	eq(t, a.do("INCR", "n"), "+QUEUED\r\n")
	eq(t, a.do("EXEC"), "*2\r\n+OK\r\n:1\r\n")
	// EXEC recorded the grant: the release, queued in a second transaction,
	// runs token-checked.
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("DEL", "tx:lock"), "+QUEUED\r\n")
	eq(t, a.do("EXEC"), "*1\r\n:1\r\n")
	eq(t, a.do("SET", "tx:lock", "t2", "NX", "PX", "5000"), "+OK\r\n")
	// Who holds the lock is decided when EXEC runs the release, in command
	// order: a stranger's DEL fails in its EXEC element, as a command
	// failing at run time does in Valkey, and deletes nothing; its
	// siblings run.
	b := dialRaw(t, e.addr)
	eq(t, b.do("MULTI"), "+OK\r\n")
	eq(t, b.do("SET", "b", "1"), "+QUEUED\r\n")
	eq(t, b.do("DEL", "tx:lock"), "+QUEUED\r\n")
	ex := b.do("EXEC")
	mustContain(t, ex, "*2\r\n+OK\r\n-NOTOWNER lockproxy refused DEL of lock key \"tx:lock\"")
	eq(t, e.direct().Get(ctx, "tx:lock").Val(), "t2")
	// A refusal that depends on no owner (an overwrite) still comes when
	// the command is queued, and aborts EXEC as Valkey does for its own.
	eq(t, b.do("MULTI"), "+OK\r\n")
	eq(t, b.do("SET", "c", "1"), "+QUEUED\r\n")
	mustContain(t, b.do("GETSET", "tx:lock", "x"), "-LOCKED")
	mustContain(t, b.do("EXEC"), "-EXECABORT")
	eq(t, e.direct().Exists(ctx, "c").Val(), int64(0))
	eq(t, e.direct().Get(ctx, "tx:lock").Val(), "t2")
}

func TestRenewal(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "lease:lock", "a", "NX", "PX", "1000"), "+OK\r\n")
	eq(t, a.do("PEXPIRE", "lease:lock", "20000"), ":1\r\n")
	if ttl := e.direct().PTTL(ctx, "lease:lock").Val(); ttl < 10*time.Second {
		t.Fatalf("holder's PEXPIRE did not extend the lease: %v", ttl)
	}
	mustContain(t, b.do("PEXPIRE", "lease:lock", "99999"), "-NOTOWNER lockproxy refused PEXPIRE")
	mustContain(t, b.do("EXPIRE", "lease:lock", "1"), "-NOTOWNER")
	mustContain(t, b.do("PERSIST", "lease:lock"), "-NOTOWNER")
	mustContain(t, b.do("GETEX", "lease:lock", "PX", "1"), "-NOTOWNER")
	eq(t, b.do("GETEX", "lease:lock"), bulk("a")) // a plain read passes
	eq(t, a.do("GETEX", "lease:lock", "PX", "30000"), bulk("a"))
	eq(t, a.do("SET", "lease:lock", "a2", "XX", "PX", "30000"), "+OK\r\n")
	eq(t, e.direct().Get(ctx, "lease:lock").Val(), "a2")
	eq(t, a.do("DEL", "lease:lock"), ":1\r\n") // the new value is the token now

	// After the lease lapsed and B took the lock, A's renewal changes nothing.
	eq(t, a.do("SET", "lease:lock", "a", "NX", "PX", "50"), "+OK\r\n")
	time.Sleep(100 * time.Millisecond)
	eq(t, b.do("SET", "lease:lock", "b", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, a.do("PEXPIRE", "lease:lock", "1"), ":0\r\n")
	eq(t, a.do("SET", "lease:lock", "a", "XX"), "$-1\r\n")
	eq(t, e.direct().Get(ctx, "lease:lock").Val(), "b")
}

func TestOverwritesRefused(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "w:lock", "a", "NX", "PX", "30000"), "+OK\r\n")
	for _, cmd := range [][]string{
		{"SET", "w:lock", "b"},
		{"GETSET", "w:lock", "b"},
		{"GETDEL", "w:lock"},
		{"APPEND", "w:lock", "x"},
		{"RENAME", "w:lock", "elsewhere"},
		{"RENAME", "src", "w:lock"},
		{"MOVE", "w:lock", "1"},
		{"COPY", "src", "w:lock", "REPLACE"},
		{"MSET", "a", "1", "w:lock", "2"},
	} {
		got := b.do(cmd...)
		if !strings.HasPrefix(got, "-LOCKED lockproxy refused "+cmd[0]) || !strings.Contains(got, "w:lock") {
			t.Errorf("%v: got %q, want a LOCKED refusal naming the key", cmd, got)
		}
	}
	eq(t, e.direct().Get(ctx, "w:lock").Val(), "a")
	eq(t, b.do("GET", "w:lock"), bulk("a"))           // reads pass
	eq(t, b.do("PTTL", "w:lock")[0:1], ":")           // so do TTL reads
	eq(t, b.do("EXISTS", "w:lock", "nope"), ":1\r\n") // and EXISTS
}

func TestFlushPolicy(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")+"on_flush: reject\n"))
	a := dialRaw(t, e.addr)
	mustContain(t, a.do("FLUSHALL"), "-LOCKED lockproxy refused FLUSHALL")
	mustContain(t, a.do("flushdb", "async"), "-LOCKED lockproxy refused FLUSHDB")
	e2 := newEnv(t, rulesOptions(t, rule("rewrite")))
	eq(t, dialRaw(t, e2.addr).do("FLUSHALL"), "+OK\r\n")
	if !hasEvent(e2, proxy.OutcomeFlushed, "") {
		t.Fatal("FLUSHALL not recorded")
	}
}

// Locks whose values are not unique (a constant 1) are still told apart by
// their grant numbers.
func TestSameValueTwoHolders(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "one:lock", "1", "NX", "PX", "50"), "+OK\r\n")
	time.Sleep(100 * time.Millisecond)
	eq(t, b.do("SET", "one:lock", "1", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, a.do("DEL", "one:lock"), ":0\r\n")
	eq(t, e.direct().Get(ctx, "one:lock").Val(), "1")
	eq(t, b.do("DEL", "one:lock"), ":1\r\n")
}

// A hash-tagged lock's counter and owner records share its hash slot, so
// the scripts may touch all three in a cluster. The slots are Valkey's own
// answer: CLUSTER KEYSLOT, from a cluster-enabled server (it computes a
// slot with no slot assigned to it).
func TestHashTagCounter(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"{*}:lock\"\n"))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "{user:1}:lock", "t", "NX", "PX", "5000"), "+OK\r\n")
	d := e.direct()
	eq(t, d.Get(ctx, "{user:1}:lock:lockproxy:grants").Val(), "1")
	eq(t, d.HLen(ctx, "{user:1}:lock:lockproxy:owners").Val(), int64(1))
	eq(t, a.do("DEL", "{user:1}:lock"), ":1\r\n")

	cl := valkeytest.Start(t, "cluster-enabled yes", "cluster-config-file nodes.conf")
	c := redis.NewClient(&redis.Options{Addr: cl.Addr})
	defer c.Close()
	slot := func(k string) int64 {
		n, err := c.Do(ctx, "CLUSTER", "KEYSLOT", k).Int64()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
		}
		return n
	}
	for _, lock := range []string{"{user:1}:lock", "plain:lock"} {
		want := slot(lock)
		for _, k := range []string{string(rewrite.CounterKey([]byte(lock))), string(rewrite.RecordsKey([]byte(lock)))} {
			if got := slot(k); got != want {
				t.Errorf("%s is in slot %d, its lock %s in %d", k, got, lock, want)
			}
		}
	}
}

func TestSeveralRules(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "mutex:*"
    release: reject
  - pattern: "*:lock"
    release: rewrite
  - pattern: "audit:*"
    release: observe
`))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "mutex:a", "t", "NX"), "+OK\r\n")
	mustContain(t, a.do("DEL", "mutex:a"), "-TOKENRELEASE")
	mustContain(t, a.do("DEL", "mutex:a"), "(rule 1 \"mutex:*\"")
	eq(t, a.do("SET", "b:lock", "t", "NX"), "+OK\r\n")
	eq(t, a.do("DEL", "b:lock"), ":1\r\n")
	eq(t, a.do("SET", "audit:x", "t"), "+OK\r\n")
	eq(t, a.do("DEL", "audit:x"), ":1\r\n")
	eq(t, a.do("SET", "free", "t"), "+OK\r\n")
	eq(t, a.do("DEL", "free"), ":1\r\n")
	// First match wins: "mutex:x:lock" is a mutex.
	eq(t, a.do("SET", "mutex:x:lock", "t", "NX"), "+OK\r\n")
	mustContain(t, a.do("DEL", "mutex:x:lock"), "-TOKENRELEASE")
}

// After SCRIPT FLUSH the proxy's EVALSHA meets NOSCRIPT and is sent again
// as EVAL, without the client noticing.
func TestScriptFlushIsTransparent(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "s:lock", "t", "NX"), "+OK\r\n")
	eq(t, e.direct().ScriptFlush(ctx).Val(), "OK")
	eq(t, a.do("DEL", "s:lock"), ":1\r\n")
	eq(t, a.do("SET", "s:lock", "t", "NX"), "+OK\r\n")
	// Pipelined lock commands go as EVAL and keep their order.
	e.direct().ScriptFlush(ctx)
	a.send(string(redisCmd("DEL", "s:lock")) + string(redisCmd("SET", "s:lock", "u", "NX")) + string(redisCmd("GET", "s:lock")))
	eq(t, a.read(), ":1\r\n")
	eq(t, a.read(), "+OK\r\n")
	eq(t, a.read(), bulk("u"))
}

// A pooled go-redis client: 50 goroutines acquire and release through a
// pool of 10 connections. Which releases work depends on the session scope.
func TestPooledClientScopes(t *testing.T) {
	for _, tc := range []struct {
		session, unknown string
		name             string
		allReleased      bool
	}{
		{"connection", "refuse", "", false},
		{"connection", "forward", "", true},
		{"client_name", "refuse", "app-1", true},
		{"client_addr", "refuse", "", true},
	} {
		t.Run(tc.session+"/"+tc.unknown, func(t *testing.T) {
			e := newEnv(t, rulesOptions(t, fmt.Sprintf("locks:\n  - pattern: \"*:lock\"\n    session: %s\n    unknown_owner: %s\n", tc.session, tc.unknown)))
			c := e.client(func(o *redis.Options) { o.PoolSize = 10; o.ClientName = tc.name })
			var released, refused, other int
			var mu sync.Mutex
			var wg sync.WaitGroup
			for g := 0; g < 50; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					key := fmt.Sprintf("p%d:lock", g)
					tok := fmt.Sprint("tok", g)
					if ok, err := c.SetNX(ctx, key, tok, 10*time.Second).Result(); !ok || err != nil {
						mu.Lock()
						other++
						mu.Unlock()
						return
					}
					n, err := c.Del(ctx, key).Result()
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil && n == 1:
						released++
					case err != nil && strings.HasPrefix(err.Error(), "NOTOWNER"):
						refused++
					default:
						other++
					}
				}(g)
			}
			wg.Wait()
			eq(t, other, 0)
			eq(t, released+refused, 50)
			if tc.allReleased {
				eq(t, released, 50)
			}
			// Every refused lock is still in place; every released one is gone.
			eq(t, int64(len(e.direct().Keys(ctx, "p*:lock").Val())), int64(refused))
		})
	}
}

// Under session: connection a sibling pooled connection is a stranger:
// acquiring on one and releasing on another is refused, deterministically.
func TestSiblingConnectionIsStranger(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	c := e.client(func(o *redis.Options) { o.PoolSize = 2 })
	c1, c2 := c.Conn(), c.Conn()
	defer c1.Close()
	defer c2.Close()
	eq(t, c1.SetNX(ctx, "sib:lock", "t", 10*time.Second).Val(), true)
	err := c2.Del(ctx, "sib:lock").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOTOWNER") {
		t.Fatalf("release from a sibling connection: %v, want NOTOWNER", err)
	}
	eq(t, c1.Del(ctx, "sib:lock").Val(), int64(1))
}

// Under session: connection the owner is the connection: once it ends, no
// client can present that owner again — a reconnected client is a
// stranger (fail closed) although the holder's record is still in Valkey,
// and the lock ends by its lease.
func TestConnectionOwnerEndsWithConnection(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "gone:lock", "t", "NX", "PX", "30000"), "+OK\r\n")
	a.nc.Close()
	b := dialRaw(t, e.addr)
	deadline := time.Now().Add(2 * time.Minute)
	for e.p.Clients() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mustContain(t, b.do("DEL", "gone:lock"), "-NOTOWNER")
	d := e.direct()
	eq(t, d.Get(ctx, "gone:lock").Val(), "t")
	eq(t, d.HLen(ctx, "{gone:lock}:lockproxy:owners").Val(), int64(1))
	if ttl := d.PTTL(ctx, "gone:lock").Val(); ttl <= 0 {
		t.Fatalf("the lock has no lease left to end by: PTTL %v", ttl)
	}
}
