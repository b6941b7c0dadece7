package e2e_test

import (
	"strings"
	"testing"
)

// Issue 38, finding 4: for a hash lock, only the holder's own owner field
// (the one its acquisition wrote, which its owner record names) counts as
// the lock's token; the "mode" field of a Redisson read-write lock, or any
// other field, does not.

// Redisson's RReadWriteLock write lock (RedissonWriteLock's scripts, as
// Redisson 3 sends them): KEYS[1] the lock, ARGV[1] the lease, ARGV[2] the
// owner field "uuid:threadId:write"; the unlock's KEYS[2] is the lock's
// channel, its ARGV the unlock message, the lease, the owner field and the
// publish command.
const (
	redissonWriteLock = `local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'write');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'write') then
  if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    local currentExpire = redis.call('pttl', KEYS[1]);
    redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]);
    return nil;
  end;
end;
return redis.call('pttl', KEYS[1]);`
	redissonWriteUnlock = `local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call(ARGV[4], KEYS[2], ARGV[1]);
  return 1;
end;
if (mode == 'write') then
  local lockExists = redis.call('hexists', KEYS[1], ARGV[3]);
  if (lockExists == 0) then
    return nil;
  else
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
    if (counter > 0) then
      redis.call('pexpire', KEYS[1], ARGV[2]);
      return 0;
    else
      redis.call('hdel', KEYS[1], ARGV[3]);
      if (redis.call('hlen', KEYS[1]) == 1) then
        redis.call('del', KEYS[1]);
        redis.call(ARGV[4], KEYS[2], ARGV[1]);
      else
        redis.call('hset', KEYS[1], 'mode', 'read');
      end;
      return 1;
    end;
  end;
end;
return nil;`
)

func TestHashLockOwnerFieldOnly(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"rw:*\"\n"))
	d := e.direct()
	holder, other := dialRaw(t, e.addr), dialRaw(t, e.addr)
	field := "8743c9c0-0795-4907-87fd-6c719a6b4586:1:write"
	keys := []string{"rw:lock", "redisson_rwlock:{rw:lock}"}
	evalArgs := func(body string, keys []string, args ...string) []string {
		a := []string{"EVAL", body, string(rune('0' + len(keys)))}
		return append(append(a, keys...), args...)
	}
	eq(t, holder.do(evalArgs(redissonWriteLock, keys[:1], "30000", field)...), "$-1\r\n")
	eq(t, d.HGet(ctx, "rw:lock", "mode").Val(), "write")
	eq(t, d.HGet(ctx, "rw:lock", field).Val(), "1")

	// A stranger that names a field the hash has, but not the holder's:
	// "mode", or another that a script of its own could read.
	got := other.do("EVAL", "return redis.call('DEL', KEYS[1])", "1", "rw:lock", "mode")
	if !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("stranger's DEL naming mode: %q, want NOTOWNER", got)
	}
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(1))
	got = other.do("EVAL", "return redis.call('PEXPIRE', KEYS[1], 1)", "1", "rw:lock", "mode")
	if !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("stranger's PEXPIRE naming mode: %q, want NOTOWNER", got)
	}
	got = other.do("EVAL", "redis.call('HSET', KEYS[1], 'x:1', 1) return redis.call('DEL', KEYS[1])", "1", "rw:lock", "mode", "x:1")
	if !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("stranger's HSET naming mode: %q, want NOTOWNER", got)
	}
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(1))
	eq(t, d.HLen(ctx, "rw:lock").Val(), int64(2))
	// A function, loaded through lockproxy, is checked the same way.
	eq(t, other.do("FUNCTION", "LOAD", "#!lua name=hx\nredis.register_function('hxdel', function(k, a) return redis.call('DEL', k[1]) end)"), bulk("hx"))
	if got := other.do("FCALL", "hxdel", "1", "rw:lock", "mode"); !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("stranger's FCALL naming mode: %q, want NOTOWNER", got)
	}
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(1))

	// The holder's own field is the token: re-entry, then the unlock
	// script from another connection of the holder's (Redisson's pool),
	// which passes the field, twice.
	eq(t, holder.do(evalArgs(redissonWriteLock, keys[:1], "30000", field)...), "$-1\r\n")
	eq(t, d.HGet(ctx, "rw:lock", field).Val(), "2")
	pool := dialRaw(t, e.addr)
	eq(t, pool.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", field, "publish")...), ":0\r\n")
	eq(t, pool.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", field, "publish")...), ":1\r\n")
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(0))

	// Taken again, and released by the holder's own connection.
	eq(t, holder.do(evalArgs(redissonWriteLock, keys[:1], "30000", field)...), "$-1\r\n")
	if got := other.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", "mode", "publish")...); !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("stranger's unlock passing mode: %q, want NOTOWNER", got)
	}
	eq(t, holder.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", field, "publish")...), ":1\r\n")
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(0))

	// A record that names no field (as written before fields were named)
	// lets no field count: the holder's other connection is refused; the
	// holder's own connection passes by its grant, and its call names the
	// field again.
	eq(t, holder.do(evalArgs(redissonWriteLock, keys[:1], "30000", field)...), "$-1\r\n")
	rs := records(t, d, "rw:lock")
	eq(t, len(rs), 1)
	for o, v := range rs {
		if !strings.HasSuffix(v, " "+field) {
			t.Fatalf("the holder's record %q does not name its field", v)
		}
		d.HSet(ctx, "{rw:lock}:lockproxy:owners", o, strings.TrimSuffix(v, field))
	}
	if got := pool.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", field, "publish")...); !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("unlock passing the field of a record that names none: %q, want NOTOWNER", got)
	}
	eq(t, holder.do(evalArgs(redissonWriteLock, keys[:1], "30000", field)...), "$-1\r\n")
	eq(t, pool.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", field, "publish")...), ":0\r\n")
	eq(t, pool.do(evalArgs(redissonWriteUnlock, keys, "0", "30000", field, "publish")...), ":1\r\n")
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(0))

	// Taken by a function: its record names the field too, which then
	// passes from another connection, where "mode" does not.
	eq(t, holder.do("FUNCTION", "LOAD", "#!lua name=hw\nredis.register_function('hwlock', function(k, a) redis.call('HSET', k[1], 'mode', 'write') redis.call('HSET', k[1], a[2], 1) return redis.call('PEXPIRE', k[1], a[1]) end)"), bulk("hw"))
	eq(t, holder.do("FCALL", "hwlock", "1", "rw:lock", "30000", field), ":1\r\n")
	for _, v := range records(t, d, "rw:lock") {
		if !strings.HasSuffix(v, " "+field) {
			t.Errorf("the function's record %q does not name its field", v)
		}
	}
	if got := other.do("FCALL", "hxdel", "1", "rw:lock", "mode"); !strings.HasPrefix(got, "-NOTOWNER ") {
		t.Errorf("stranger's FCALL naming mode: %q, want NOTOWNER", got)
	}
	eq(t, pool.do("FCALL", "hxdel", "1", "rw:lock", field), ":1\r\n")
	eq(t, d.Exists(ctx, "rw:lock").Val(), int64(0))
}
