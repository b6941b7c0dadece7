package e2e_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A FLUSHALL or FLUSHDB inside a script, where on_flush allows it, must
// raise the fencing epoch as the plain command does (issue 29: a token
// never repeats across a flush the rules allow). On main the script's
// flush deleted the grant counters and left the epoch as it was: the
// next grant of the lock was token 1 again.
func TestScriptFlushRaisesEpoch(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	fence := func(t *testing.T, c *raw, key string) int64 {
		t.Helper()
		got := c.do("LOCKPROXY", "FENCE", key)
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"), 10, 64)
		if err != nil {
			t.Fatalf("LOCKPROXY FENCE %s: %q", key, got)
		}
		return n
	}
	for _, tc := range []struct{ name, body, reply string }{
		{"FLUSHALL", "return redis.call('FLUSHALL')", "+OK\r\n"},
		{"FLUSHDB", "return redis.call('flushdb')", "+OK\r\n"},
		{"FLUSHALL ASYNC by pcall", "return redis.pcall('FLUSHALL', 'ASYNC')", "+OK\r\n"},
		{"FLUSHALL under RESP3", "redis.setresp(3) return redis.call('FLUSHALL')", "+OK\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.FlushAll(ctx)
			c := dialRaw(t, e.addr)
			eq(t, c.do("SET", "f:lock", "a", "NX", "PX", "60000"), "+OK\r\n")
			before := fence(t, c, "f:lock")
			eq(t, c.do("EVAL", tc.body, "0"), tc.reply)
			eq(t, d.Exists(ctx, "f:lock").Val(), int64(0))
			eq(t, c.do("SET", "f:lock", "b", "NX", "PX", "60000"), "+OK\r\n")
			if after := fence(t, c, "f:lock"); after <= before {
				t.Fatalf("token %d after the script's %s, %d before it", after, tc.name, before)
			}
		})
	}
	t.Run("FLUSHALL from another database, which the script stays in", func(t *testing.T) {
		d.FlushAll(ctx)
		c := dialRaw(t, e.addr)
		d2 := redis.NewClient(&redis.Options{Addr: e.srv.Addr, DB: 2})
		defer d2.Close()
		eq(t, c.do("SET", "f:lock", "a", "NX", "PX", "60000"), "+OK\r\n")
		before := fence(t, c, "f:lock")
		eq(t, c.do("SELECT", "3"), "+OK\r\n")
		eq(t, c.do("SET", "g:lock", "a", "NX", "PX", "60000"), "+OK\r\n")
		before3 := fence(t, c, "g:lock")
		d2.Set(ctx, "x", "1", 0)
		// The script moves to database 2, flushes, and writes on there.
		eq(t, c.do("EVAL", "redis.call('SELECT', 2) redis.call('FLUSHALL') redis.call('SET', 'after', 'yes') return redis.call('EXISTS', 'after', 'x')", "0"), ":1\r\n")
		eq(t, d2.Get(ctx, "after").Val(), "yes")
		eq(t, c.do("EXISTS", "after"), ":0\r\n") // the client is in database 3 still
		eq(t, c.do("SET", "g:lock", "b", "NX", "PX", "60000"), "+OK\r\n")
		if after := fence(t, c, "g:lock"); after <= before3 {
			t.Fatalf("database 3: token %d after the flush, %d before it", after, before3)
		}
		eq(t, c.do("SELECT", "0"), "+OK\r\n")
		eq(t, c.do("SET", "f:lock", "b", "NX", "PX", "60000"), "+OK\r\n")
		if after := fence(t, c, "f:lock"); after <= before {
			t.Fatalf("database 0: token %d after the flush, %d before it", after, before)
		}
		eq(t, d.Exists(ctx, "{lockproxy}:lockproxy:flush").Val(), int64(0))
	})
	t.Run("in a function library", func(t *testing.T) {
		d.FlushAll(ctx)
		d.FunctionFlush(ctx)
		c := dialRaw(t, e.addr)
		eq(t, c.do("FUNCTION", "LOAD", "#!lua name=fl\nredis.register_function('fl', function() return redis.call('FLUSHALL') end)"), "$2\r\nfl\r\n")
		eq(t, c.do("SET", "f:lock", "a", "NX", "PX", "60000"), "+OK\r\n")
		before := fence(t, c, "f:lock")
		eq(t, c.do("FCALL", "fl", "0"), "+OK\r\n")
		eq(t, c.do("SET", "f:lock", "b", "NX", "PX", "60000"), "+OK\r\n")
		if after := fence(t, c, "f:lock"); after <= before {
			t.Fatalf("token %d after the function's FLUSHALL, %d before it", after, before)
		}
	})
}

// In front of a cluster nothing in Valkey survives a flush to raise the
// epoch from, and a script reaches one node: a flush inside a script is
// refused there (LOCKED), and the plain command stays the way to flush.
func TestScriptFlushRefusedInCluster(t *testing.T) {
	e, _ := clusterEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	c := dialRaw(t, e.addr)
	mustContain(t, c.do("EVAL", "return redis.call('FLUSHALL')", "1", "cfl:lock"), "-LOCKED lockproxy refused FLUSHALL inside a script in front of a cluster")
	mustContain(t, c.do("EVAL", "return redis.pcall('FLUSHDB')", "1", "cfl:lock"), "-LOCKED lockproxy refused FLUSHDB inside a script in front of a cluster")
}
