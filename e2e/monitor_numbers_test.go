package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// A key passed to redis.call as a Lua number is the string Valkey makes of
// it: an integer's digits (up to long long), else the shortest form that
// reads back the same. The monitor compared Lua's tostring (%.14g)
// instead, which differs from 1e14 up and for most fractions: a
// stranger's redis.call('DEL', 123456789012345678) deleted the lock
// "123456789012345680" unchecked, with the lock in KEYS or not (found in
// review, reproduced on main: DEL answered 1).
func TestMonitorNumericKeys(t *testing.T) {
	// Each lock by its exact name as the server under test spells the
	// number (Valkey 8 and Redis 7.0 differ), so that no other spelling
	// matches a rule.
	exprs := []string{"123456789012345678", "-123456789012345678", "1/3", "1e20", "2^53 + 1", "0.1 + 0.2", "99999999999999", "-0"}
	probe := dialRaw(t, valkeytest.Start(t).Addr)
	keys := map[string]string{}
	yaml := "locks:\n"
	for _, x := range exprs {
		got := probe.do("EVAL", "return redis.call('ECHO', "+x+")", "0")
		keys[x] = strings.TrimSuffix(got[strings.Index(got, "\r\n")+2:], "\r\n")
		yaml += "  - pattern: \"" + keys[x] + "\"\n"
	}
	e := newEnv(t, rulesOptions(t, yaml))
	d := e.direct()
	for _, expr := range exprs {
		key := keys[expr]
		t.Run(expr, func(t *testing.T) {
			d.FlushAll(ctx)
			v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
			eq(t, v.do("SET", key, "vtok", "NX", "PX", "600000"), "+OK\r\n")
			mustContain(t, s.do("EVAL", "return redis.call('DEL', "+expr+")", "0"), "-LOCKED")
			mustContain(t, s.do("EVAL", "return redis.call('DEL', "+expr+")", "1", key), "-NOTOWNER")
			mustContain(t, s.do("EVAL", "return redis.call('SET', "+expr+", 'x')", "1", key), "-NOTOWNER")
			eq(t, d.Get(ctx, key).Val(), "vtok")
			// The holder's own release by number passes, its record with it.
			eq(t, v.do("EVAL", "return redis.call('DEL', "+expr+")", "1", key), ":1\r\n")
			eq(t, d.Exists(ctx, key).Val(), int64(0))
		})
	}
}

// A SET's options in any order: the monitor reads an acquisition's PX or
// EX from among them (for its acquisition time), and one followed by
// more options must read as the number it is (the merge of the night's
// cost work had tonumber take the next option as its base: "SET k v PX
// 60000 NX" failed inside the monitor).
func TestMonitorSetOptionsOrder(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	h := dialRaw(t, e.addr)
	for i, opts := range [][]string{{"PX", "60000", "NX"}, {"EX", "60", "NX", "GET"}, {"NX", "PX", "60000"}, {"NX", "EX", "60"}} {
		key := "o" + string(rune('a'+i)) + ":lock"
		body := "return redis.call('SET', KEYS[1], ARGV[1]"
		for _, o := range opts {
			body += ", '" + o + "'"
		}
		body += ")"
		want := "+OK\r\n"
		if opts[len(opts)-1] == "GET" {
			want = "$-1\r\n" // the old value: none
		}
		eq(t, h.do("EVAL", body, "1", key, "tok"), want)
		mustContain(t, h.do("LOCKPROXY", "FENCE", key), ":")
		eq(t, h.do("DEL", key), ":1\r\n")
	}
}
