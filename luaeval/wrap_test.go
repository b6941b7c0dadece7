package luaeval

import (
	"strconv"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/rewrite"
)

// The wrappers lockproxy runs clients' scripts in (rewrite.WrapBody), run
// offline and on valkey-server: the same replies, the same grants and
// records. Timestamps in the records differ between the two clocks, so
// the records are compared by count and grant.
func TestDifferentialWrappers(t *testing.T) {
	srv := valkeytest.Start(t)
	rc := dialRESP(t, srv.Addr, 2)
	requireValkey80(t, rc)
	lock, ctr, recs := "d:lock", "{d:lock}:lockproxy:grants", "{d:lock}:lockproxy:owners"
	// locked runs body wrapped in its locks form: KEYS[1] the lock.
	locked := func(body string, args ...string) []string {
		w := rewrite.WrapBody(body, rewrite.WrapShape{Locks: 1})
		out := []string{"EVAL", w, "4", lock, lock, ctr, recs}
		out = append(out, args...)
		return append(out, "conn:A", "600000")
	}
	// fenced runs body wrapped in its fence form: KEYS[1] a guarded key.
	fenced := func(body, mode, unfenced string, args ...string) []string {
		w := rewrite.WrapBody(body, rewrite.WrapShape{FenceKeys: 3, FenceArgs: 6})
		out := []string{"EVAL", w, "4", "{g}:data", "{g}:fence", "{g}:lock:lockproxy:owners", "{g}:fence:high"}
		out = append(out, args...)
		return append(out, "conn:A", "1", "1", mode, unfenced, "{g}:data")
	}
	const (
		obtain  = "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 10000) then return redis.status_reply('OK') end\nreturn false"
		release = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\nreturn 0"
		refresh = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], 20000) end\nreturn 0"
		write   = "redis.call('SET', KEYS[1], ARGV[1])\nreturn {#KEYS, #ARGV, KEYS[1], ARGV[1]}"
		broken  = "redis.call('SET', KEYS[1], ARGV[1])\nlocal t = nil\nreturn t.x"
		forever = "if redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 1 end\nreturn 0"
		reset   = "return redis.call('SET', KEYS[1], ARGV[1], 'XX', 'PX', 30000)"
	)
	// many runs body wrapped for n locks m1:lock ... mn:lock, all in
	// KEYS: past maxUnrolled keys and arguments the prologue reads them in
	// loops rather than one by one.
	many := func(body string, n int, args ...string) []string {
		w := rewrite.WrapBody(body, rewrite.WrapShape{Locks: n})
		out := []string{"EVAL", w, strconv.Itoa(4 * n)}
		var own []string
		for i := 1; i <= n; i++ {
			k := "{m" + strconv.Itoa(i) + "}:lock"
			out = append(out, k)
			own = append(own, k, "{m"+strconv.Itoa(i)+"}:lock:lockproxy:grants", "{m"+strconv.Itoa(i)+"}:lock:lockproxy:owners")
		}
		out = append(append(out, own...), args...)
		return append(out, "conn:A", "600000")
	}
	// both runs body wrapped with the fence check and the locks' records:
	// KEYS[1] the lock {c}:lock (its counter is the fence's), KEYS[2] the
	// key it guards.
	both := func(body, mode, unfenced string, args ...string) []string {
		w := rewrite.WrapBody(body, rewrite.WrapShape{FenceKeys: 3, FenceArgs: 6, Locks: 1})
		out := []string{"EVAL", w, "8", "{c}:lock", "{c}:data", "{c}:fence", "{c}:lock:lockproxy:owners", "{c}:fence:high", "{c}:lock", "{c}:fence", "{c}:lock:lockproxy:owners"}
		out = append(out, args...)
		return append(out, "conn:A", "1", "1", mode, unfenced, "{c}:data", "conn:A", "600000")
	}
	const takeAndWrite = "redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 10000)\nredis.call('SET', KEYS[2], ARGV[1])\nreturn {#KEYS, #ARGV, KEYS[2], ARGV[1]}"
	const obtainAll = "for i = 1, #KEYS do redis.call('SET', KEYS[i], ARGV[1], 'NX', 'PX', 10000) end\nreturn #KEYS .. ' ' .. #ARGV .. ' ' .. tostring(KEYS[#KEYS]) .. ' ' .. tostring(ARGV[#ARGV])"
	steps := []step{
		// No grant yet: refused under unfenced_writes: reject, let through
		// under allow, when the body takes the lock and gets grant 1.
		do(both(takeAndWrite, "current", "reject", "a")...),
		do("EXISTS", "{c}:lock", "{c}:data"),
		do(both(takeAndWrite, "current", "allow", "a")...),
		do("GET", "{c}:fence"),
		do("HLEN", "{c}:lock:lockproxy:owners"),
		// Now the holder: its token is current, the write passes.
		do(both(takeAndWrite, "current", "reject", "b")...),
		do("GET", "{c}:data"),
		do("GET", "{c}:fence"),
		// A newer grant elsewhere: STALE, nothing written.
		do("INCR", "{c}:fence"),
		do(both(takeAndWrite, "current", "reject", "c")...),
		do("GET", "{c}:data"),
		do(many(obtainAll, 2, "t")...),
		do(many(obtainAll, 9, "t")...),
		do("GET", "{m1}:lock:lockproxy:grants"),
		do("GET", "{m9}:lock:lockproxy:grants"),
		do("HLEN", "{m9}:lock:lockproxy:owners"),
		do(locked(obtain, "tok")...),
		do("GET", ctr),
		do("HLEN", recs),
		do(locked(obtain, "other")...),
		do("GET", ctr),
		do(locked(refresh, "tok")...),
		do("HLEN", recs),
		do(locked(release, "other")...),
		do("HLEN", recs),
		do(locked(release, "tok")...),
		do("HLEN", recs),
		do("EXISTS", lock),
		// A lock without a lease: its records have no expiry until it goes.
		do(locked(forever, "p")...),
		do("HLEN", recs),
		do("PTTL", recs),
		do(locked(release, "p")...),
		do("EXISTS", recs),
		// Taken again over a record left behind (the lock deleted under
		// it): the records are settled, not written fresh.
		do(locked(obtain, "tok")...),
		do("DEL", lock),
		do(locked(obtain, "tok2")...),
		do("GET", ctr),
		do("HLEN", recs),
		// The holder re-sets its lock with another value: the record follows.
		do(locked(reset, "tok3")...),
		do("HLEN", recs),
		do(locked(release, "tok2")...),
		do("EXISTS", lock),
		do(locked(release, "tok3")...),
		do("EXISTS", lock, recs),
		do(fenced(write, "current", "reject", "v")...),
		do(fenced(write, "current", "allow", "v")...),
		do("GET", "{g}:data"),
		do("SET", "{g}:fence", "4"),
		do("HSET", "{g}:lock:lockproxy:owners", "conn:A", "3 0 0 x"),
		do(fenced(write, "current", "reject", "w")...),
		do(fenced(write, "highest-lock", "reject", "w")...),
		do("HGETALL", "{g}:fence:high"),
		do("HSET", "{g}:fence:high", "{g}:lock:lockproxy:owners", "9"),
		do(fenced(write, "highest-lock", "reject", "z")...),
		do("GET", "{g}:data"),
		do("SET", "{g}:fence", "3"),
		{args: fenced(broken, "current", "allow", "v"), cmp: vmErrShape},
	}
	rc.Do(t, "FLUSHALL")
	st := New()
	for i, s := range steps {
		want := rc.Do(t, s.args...)
		got := st.DoProto(2, s.args...)
		if msg := compareReplies(s.cmp, got, want); msg != "" {
			t.Errorf("step %d %.60q:\n luaeval: %q\n valkey:  %q\n %s", i, s.args, got, want, msg)
		}
	}
}
