package e2e_test

import (
	"fmt"
	"testing"
)

// A script may switch its calls' replies to RESP3 (redis.setresp(3)).
// The monitor's own reads and records must not change meaning with it:
// under RESP3 a SET NX that found the key taken answers nil, not false,
// and lockproxy read that nil as "the call was interrupted", then, the
// lock holding the value the script had tried to set, as an acquisition.
// A stranger that read the holder's token (GET is allowed) got a grant
// newer than the holder's, and with it the lock: its plain DEL deleted
// it (found in review, reproduced on main: LOCKPROXY FENCE answered 2,
// DEL 1).
func TestMonitorResp3(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := e.direct()
	const takeResp3 = "redis.setresp(3) return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 600000)"
	t.Run("a SET NX that found the lock taken grants nothing", func(t *testing.T) {
		d.FlushAll(ctx)
		v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, s.do("EVAL", takeResp3, "1", "v:lock", "vtok"), "$-1\r\n")
		eq(t, s.do("LOCKPROXY", "FENCE", "v:lock"), "$-1\r\n")
		mustContain(t, s.do("DEL", "v:lock"), "-NOTOWNER")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		eq(t, d.Get(ctx, "{v:lock}:lockproxy:grants").Val(), "1")
		eq(t, v.do("LOCKPROXY", "FENCE", "v:lock"), ":1\r\n")
		eq(t, v.do("DEL", "v:lock"), ":1\r\n")
	})
	t.Run("SETNX, HSET and DEL under RESP3", func(t *testing.T) {
		d.FlushAll(ctx)
		v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, s.do("EVAL", "redis.setresp(3) return redis.call('SETNX', KEYS[1], ARGV[1])", "1", "v:lock", "vtok"), ":0\r\n")
		eq(t, s.do("LOCKPROXY", "FENCE", "v:lock"), "$-1\r\n")
		mustContain(t, s.do("EVAL", "redis.setresp(3) return redis.call('DEL', KEYS[1])", "1", "v:lock"), "-NOTOWNER")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		// The holder's own release under RESP3 takes its record with it.
		eq(t, v.do("EVAL", "redis.setresp(3) return redis.call('DEL', KEYS[1])", "1", "v:lock"), ":1\r\n")
		eq(t, d.Exists(ctx, "v:lock", "{v:lock}:lockproxy:owners").Val(), int64(0))
	})
	t.Run("an acquisition under RESP3 is the taker's", func(t *testing.T) {
		d.FlushAll(ctx)
		h := dialRaw(t, e.addr)
		eq(t, h.do("EVAL", takeResp3, "1", "n:lock", "htok"), "+OK\r\n")
		eq(t, h.do("LOCKPROXY", "FENCE", "n:lock"), ":1\r\n")
		// Back in RESP2 after setresp(2): the reply of a missing key is
		// false again, and the script's own calls see it.
		eq(t, h.do("EVAL", "redis.setresp(3) redis.setresp(2) return redis.call('GET', 'nokey') == false and redis.call('SET', KEYS[1], ARGV[1], 'NX') == false", "1", "n:lock", "x"), ":1\r\n")
		eq(t, h.do("DEL", "n:lock"), ":1\r\n")
	})
	t.Run("in a function library", func(t *testing.T) {
		d.FlushAll(ctx)
		v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
		lib := "#!lua name=r3\nredis.register_function('take', function(keys, args) redis.setresp(3) return redis.call('SET', keys[1], args[1], 'NX', 'PX', 600000) end)\nredis.register_function('after', function(keys, args) return redis.call('GET', 'nokey') == false end)"
		eq(t, s.do("FUNCTION", "LOAD", lib), bulk("r3"))
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, s.do("FCALL", "take", "1", "v:lock", "vtok"), "$-1\r\n")
		eq(t, s.do("LOCKPROXY", "FENCE", "v:lock"), "$-1\r\n")
		mustContain(t, s.do("DEL", "v:lock"), "-NOTOWNER")
		eq(t, d.Get(ctx, "{v:lock}:lockproxy:grants").Val(), "1")
		// The next call of the library starts in RESP2, as on Valkey.
		eq(t, s.do("FCALL", "after", "0"), ":1\r\n")
		eq(t, s.do("FCALL", "take", "1", "w:lock", "stok"), "+OK\r\n")
		eq(t, s.do("LOCKPROXY", "FENCE", "w:lock"), ":1\r\n")
		eq(t, s.do("DEL", "w:lock"), ":1\r\n")
	})
	t.Run("setresp's errors are Valkey's", func(t *testing.T) {
		s := dialRaw(t, e.addr)
		dv := dialRaw(t, e.srv.Addr)
		for _, body := range []string{
			"\nredis.setresp(5)\nreturn 1",
			"\nredis.setresp()\nreturn 1",
			"return tostring(pcall(redis.setresp, 4))",
			"redis.setresp('3') return redis.call('GET', KEYS[1])",
			"local ok = pcall(redis.setresp, 7)\nredis.setresp(3)\nreturn {tostring(ok), type(redis.setresp), redis.call('GET', 'nokey') == nil}",
			"\nserver.setresp(3, 4)",
		} {
			eq(t, s.do("EVAL", body, "1", "v:lock"), dv.do("EVAL", body, "1", "v:lock"))
		}
	})
}

// In front of a cluster the grant reads the node's config epoch from
// CLUSTER INFO, whose reply a RESP3 script gets as a verbatim string: an
// acquisition under RESP3 is still granted (on main the script failed
// after its SET had taken the lock, and the lock stayed without a grant).
func TestMonitorResp3Cluster(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	m := slotMap(t, cl)
	h := dialRaw(t, e.addr)
	for i := 0; i < 3; i++ {
		k := fmt.Sprintf("r3mon%d:lock", i)
		eq(t, h.do("EVAL", "redis.setresp(3) return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 60000)", "1", k, "tok"), "+OK\r\n")
		mustContain(t, h.do("LOCKPROXY", "FENCE", k), ":")
		eq(t, h.do("DEL", k), ":1\r\n")
		eq(t, directTo(t, m, k, "EXISTS", k), ":0\r\n")
	}
}
