package e2e_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Issue 18, items 1 and 5: locks taken by scripts get grants and owner
// records, in the same step as the script; releases and renewals by
// guarded scripts move the records with them.

// Redisson's scripts (a hash lock: hincrby of the owner field), written
// for these tests in their shape; node-redlock's (v5: exists, then set PX
// on every key; a per-key token-checked release) are the analysis's
// testdata/lua/multi_acquire.lua and multi_each_release.lua.
const (
	redissonLock = `if (redis.call('exists', KEYS[1]) == 0) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`
	redissonUnlock = `if (redis.call('hexists', KEYS[1], ARGV[1]) == 0) then
  return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[1], -1);
if (counter > 0) then
  redis.call('pexpire', KEYS[1], ARGV[2]);
  return 0;
else
  redis.call('del', KEYS[1]);
  return 1;
end;
return nil;`
)

func grants(t *testing.T, d *redis.Client, lock string) string {
	t.Helper()
	return d.Get(ctx, "{"+lock+"}:lockproxy:grants").Val()
}

func records(t *testing.T, d *redis.Client, lock string) map[string]string {
	t.Helper()
	return d.HGetAll(ctx, "{"+lock+"}:lockproxy:owners").Val()
}

func TestScriptAcquisitionsGetGrants(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()

	t.Run("bsm/redislock", func(t *testing.T) {
		c := e.client()
		locker := redislock.New(c)
		l, err := locker.Obtain(ctx, "rl:lock", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, grants(t, d, "rl:lock"), "1")
		recs := records(t, d, "rl:lock")
		eq(t, len(recs), 1)
		for _, r := range recs {
			if !strings.HasPrefix(r, "1 ") || !strings.HasSuffix(r, " "+l.Token()) {
				t.Fatalf("record %q", r)
			}
		}
		// The holder's token, as LOCKPROXY FENCE tells it.
		eq(t, c.Do(ctx, "LOCKPROXY", "FENCE", "rl:lock").Val(), int64(1))
		// A second client fails to obtain it: no grant minted.
		if _, err := redislock.New(e.client()).Obtain(ctx, "rl:lock", time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second obtain: %v", err)
		}
		eq(t, grants(t, d, "rl:lock"), "1")
		// Refresh moves the record's lease end; Release drops the record.
		before := records(t, d, "rl:lock")
		time.Sleep(5 * time.Millisecond)
		if err := l.Refresh(ctx, time.Minute, nil); err != nil {
			t.Fatal(err)
		}
		after := records(t, d, "rl:lock")
		for k, v := range after {
			if v == before[k] {
				t.Fatalf("refresh did not move the record: %q", v)
			}
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		eq(t, len(records(t, d, "rl:lock")), 0)
		// Obtained again: the next grant.
		l, err = locker.Obtain(ctx, "rl:lock", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, grants(t, d, "rl:lock"), "2")
		_ = l.Release(ctx)
	})

	t.Run("go-redsync/redsync", func(t *testing.T) {
		rs := redsync.New(goredis.NewPool(e.client()))
		m := rs.NewMutex("rs:lock", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := m.Lock(); err != nil {
			t.Fatal(err)
		}
		eq(t, grants(t, d, "rs:lock"), "1")
		eq(t, len(records(t, d, "rs:lock")), 1)
		other := redsync.New(goredis.NewPool(e.client())).NewMutex("rs:lock", redsync.WithTries(1))
		if err := other.Lock(); err == nil {
			t.Fatal("second lock taken")
		}
		eq(t, grants(t, d, "rs:lock"), "1")
		before := records(t, d, "rs:lock")
		time.Sleep(5 * time.Millisecond)
		if ok, err := m.Extend(); !ok || err != nil {
			t.Fatalf("extend: %v %v", ok, err)
		}
		for k, v := range records(t, d, "rs:lock") {
			if v == before[k] {
				t.Fatalf("extend did not move the record: %q", v)
			}
		}
		if ok, err := m.Unlock(); !ok || err != nil {
			t.Fatalf("unlock: %v %v", ok, err)
		}
		eq(t, len(records(t, d, "rs:lock")), 0)
	})

	t.Run("node-redlock style", func(t *testing.T) {
		c := e.client()
		keys := []string{"nr1:lock", "nr2:lock"}
		redlockAcquire, redlockRelease := luaFile(t, "multi_acquire.lua"), luaFile(t, "multi_each_release.lua")
		eq(t, redis.NewScript(redlockAcquire).Run(ctx, c, keys, "tok", 10000).Val(), int64(2))
		eq(t, grants(t, d, "nr1:lock"), "1")
		eq(t, grants(t, d, "nr2:lock"), "1")
		// Held: the second attempt fails and mints nothing.
		eq(t, redis.NewScript(redlockAcquire).Run(ctx, e.client(), keys, "other", 10000).Val(), int64(0))
		eq(t, grants(t, d, "nr1:lock"), "1")
		eq(t, redis.NewScript(redlockRelease).Run(ctx, c, keys, "tok").Val(), int64(2))
		eq(t, len(records(t, d, "nr1:lock")), 0)
		eq(t, len(records(t, d, "nr2:lock")), 0)
	})

	t.Run("Redisson style", func(t *testing.T) {
		c := e.client()
		owner := "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
		lock := redis.NewScript(redissonLock)
		if err := lock.Run(ctx, c, []string{"rd:lock"}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("lock: %v", err)
		}
		eq(t, grants(t, d, "rd:lock"), "1")
		// Re-entry: the same owner again, no new grant.
		if err := lock.Run(ctx, c, []string{"rd:lock"}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("re-entry: %v", err)
		}
		eq(t, grants(t, d, "rd:lock"), "1")
		// Another owner: refused (the lock's PTTL), no grant.
		if v := lock.Run(ctx, e.client(), []string{"rd:lock"}, 30000, "other:1").Val(); v == nil {
			t.Fatal("second owner took it")
		}
		eq(t, grants(t, d, "rd:lock"), "1")
		unlock := redis.NewScript(redissonUnlock)
		eq(t, unlock.Run(ctx, c, []string{"rd:lock"}, owner, 30000).Val(), int64(0))
		eq(t, unlock.Run(ctx, c, []string{"rd:lock"}, owner, 30000).Val(), int64(1))
		eq(t, len(records(t, d, "rd:lock")), 0)
	})
}

// A lock taken by a script, under a fence rule: the holder's writes to a
// guarded key pass (they were refused as unfenced before), and its token
// is the counter's.
func TestScriptAcquisitionFenced(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	c := e.client()
	d := e.direct()
	l, err := redislock.New(c).Obtain(ctx, "{f}:lock", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, d.Get(ctx, "{f}:fence").Val(), "1")
	eq(t, c.Do(ctx, "LOCKPROXY", "FENCE", "{f}:lock").Val(), int64(1))
	eq(t, c.Set(ctx, "{f}:data", "by holder", 0).Val(), "OK")
	_ = l.Release(ctx)
}

// Issue 18, item 6: the wrapper is cached by its own SHA1 with the usual
// NOSCRIPT fallback; EVALSHA of a body lockproxy never saw is NOSCRIPT.
func TestScriptWrapperEVALSHA(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	c := dialRaw(t, e.addr)
	obtain := "if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 1 end\nreturn 0"
	eq(t, c.do("SCRIPT", "LOAD", obtain), bulk(sha1hex(obtain)))
	eq(t, c.do("EVALSHA", sha1hex(obtain), "1", "w:lock", "a"), ":1\r\n")
	eq(t, grants(t, d, "w:lock"), "1")
	d.Del(ctx, "w:lock")
	// Valkey forgets every script: the wrapper's EVALSHA meets NOSCRIPT and
	// is sent again as EVAL.
	d.ScriptFlush(ctx)
	eq(t, c.do("EVALSHA", sha1hex(obtain), "1", "w:lock", "a"), ":1\r\n")
	eq(t, grants(t, d, "w:lock"), "2")
	// A body only Valkey knows cannot run under the monitor: NOSCRIPT,
	// and the client's fallback EVAL takes the lock with a grant.
	d.Del(ctx, "w:lock")
	other := "if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 2 end\nreturn 0"
	sha := d.ScriptLoad(ctx, other).Val()
	mustContain(t, c.do("EVALSHA", sha, "1", "w:lock", "b"), "-NOSCRIPT")
	eq(t, c.do("EVAL", other, "1", "w:lock", "b"), ":2\r\n")
	eq(t, grants(t, d, "w:lock"), "3")
}
