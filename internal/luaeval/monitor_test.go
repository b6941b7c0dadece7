package luaeval

import (
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Issue 26: the monitored text lockproxy runs a client's script as
// (rewrite.MonitorBody), run offline and on valkey-server: the same
// replies (refusals included), the same grants and records, the same
// errors with the body's user_script:LINE. Timestamps in the records
// differ between the two clocks, so the records are compared by count.
func TestDifferentialMonitored(t *testing.T) {
	srv := valkeytest.Start(t)
	rc := dialRESP(t, srv.Addr, 2)
	requireValkey80(t, rc)
	rules, err := policy.NewRules([]policy.LockRule{
		{Pattern: "{*}:lock", Fence: &policy.FenceConfig{Counter: "{base}:fence", Guards: []string{"{base}:data"}}},
		{Pattern: "*:lock"},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := rewrite.MonitorRulesFor(rules, policy.FlushReject)
	lock, ctr, recs := "d:lock", "{d:lock}:lockproxy:grants", "{d:lock}:lockproxy:owners"
	// locked runs body with KEYS[1] the lock d:lock, for owner conn:A.
	lockedAs := func(owner, body string, args ...string) []string {
		w := rewrite.MonitorBody(body, rewrite.MonitorShape{Locks: 1}, m)
		out := append([]string{"EVAL", w, "1", lock}, args...)
		return append(out, "600000", lock, ctr, recs, owner, "rewrite")
	}
	locked := func(body string, args ...string) []string { return lockedAs("conn:A", body, args...) }
	// fenced runs body with KEYS[1] the guarded {g}:data, for conn:A.
	fenced := func(body, unfenced string, args ...string) []string {
		w := rewrite.MonitorBody(body, rewrite.MonitorShape{FenceArgs: 6, FenceKeys: 3}, m)
		out := append([]string{"EVAL", w, "1", "{g}:data"}, args...)
		return append(out, "600000", "conn:A", "1", "1", "current", unfenced, "{g}:data", "{g}:fence", "{g}:lock:lockproxy:owners", "{g}:fence:high")
	}
	const (
		obtain  = "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 10000) then return redis.status_reply('OK') end\nreturn false"
		release = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\nreturn 0"
		refresh = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], 20000) end\nreturn 0"
		blind   = "redis.call('SET', 'x', 1)\nreturn redis.call('DEL', KEYS[1])"
		pblind  = "local r = redis.pcall('DEL', KEYS[1])\nreturn {r, #KEYS, #ARGV}"
		own     = "return redis.pcall('SET', KEYS[1] .. ':lockproxy:grants', 0)"
		write   = "redis.call('SET', KEYS[1], ARGV[1])\nreturn {#KEYS, #ARGV, KEYS[1], ARGV[1]}"
		broken  = "redis.call('SET', 'y', 'a')\n\nreturn redis.call('INCR', 'y')"
		sealed  = "return {type(getfenv(0).redis.call), tostring(rawequal(_G, getfenv(1))), tostring(getmetatable(redis))}"
		global  = "x = 1"
		missing = "return nosuch"
	)
	steps := []step{
		do(locked(obtain, "tok")...),
		do("GET", ctr),
		do("HLEN", recs),
		do(locked(obtain, "other")...),
		do(locked(refresh, "tok")...),
		do(locked(release, "other")...),
		// A stranger: refused unless it shows the token.
		do(lockedAs("conn:B", blind, "other")...),
		do(lockedAs("conn:B", pblind, "other")...),
		do(lockedAs("conn:B", refresh, "tok")...),
		do("GET", lock),
		do(locked(blind, "other")...),
		do(locked(pblind)...),
		do(locked(own)...),
		do("EXISTS", lock, ctr, recs),
		do(locked(release, "tok")...),
		do("EXISTS", lock, recs),
		do(locked(broken)...),
		do(locked(sealed)...),
		do(locked(global)...),
		do(locked(missing)...),
		// The fence: no grant (reject, then allow), a grant, a newer one.
		do(fenced(write, "reject", "v")...),
		do(fenced(write, "allow", "v")...),
		do("GET", "{g}:data"),
		do("SET", "{g}:fence", "4"),
		do("HSET", "{g}:lock:lockproxy:owners", "conn:A", "4 0 0 x"),
		do(fenced(write, "reject", "w")...),
		do("GET", "{g}:data"),
		do("INCR", "{g}:fence"),
		do(fenced(write, "reject", "z")...),
		do("GET", "{g}:data"),
	}
	rc.Do(t, "FLUSHALL")
	st := New()
	for i, s := range steps {
		want := rc.Do(t, s.args...)
		got := st.DoProto(2, s.args...)
		if msg := compareReplies(s.cmp, got, want); msg != "" {
			t.Errorf("step %d %.60q:\n luaeval: %q\n valkey:  %q\n %s", i, s.args[len(s.args)-1], got, want, msg)
		}
	}
}
