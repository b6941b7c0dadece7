package e2e_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errPrefix fails unless err is a Valkey error reply starting with prefix.
func errPrefix(t *testing.T, err error, prefix string, contains ...string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("got error %v, want one starting with %q", err, prefix)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q lacks %q", err, c)
		}
	}
}

// Guarded and acquire scripts pass through untouched and do their job:
// run the way client libraries run them (EVALSHA, EVAL on NOSCRIPT).
func TestScriptsGuardedPass(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	c := e.client()
	d := e.direct()
	run := func(file string, keys []string, args ...interface{}) *redis.Cmd {
		t.Helper()
		return redis.NewScript(luaFile(t, file)).Run(ctx, c, keys, args...)
	}
	val := func(cmd *redis.Cmd) interface{} {
		t.Helper()
		v, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("script failed: %v", err)
		}
		return v
	}

	// Acquire scripts, each: the first caller takes it, the second not.
	for _, file := range []string{"setnx_acquire.lua", "exists_acquire.lua", "setnx_expire_acquire.lua", "obtain_or_refresh.lua"} {
		key := strings.TrimSuffix(file, ".lua") + ":lock"
		ttl := 30000
		if file == "setnx_expire_acquire.lua" {
			ttl = 30 // EXPIRE takes seconds
		}
		if v := val(run(file, []string{key}, "tok-a", ttl)); v == nil || v == int64(0) {
			t.Fatalf("%s: first acquire got %v", file, v)
		}
		if file == "obtain_or_refresh.lua" {
			eq(t, val(run(file, []string{key}, "tok-a", ttl)), int64(1)) // ours: refreshed
		}
		if v := val(run(file, []string{key}, "tok-b", ttl)); v != nil && v != int64(0) {
			t.Fatalf("%s: second acquire got %v", file, v)
		}
		eq(t, d.Get(ctx, key).Val(), "tok-a")
		if d.PTTL(ctx, key).Val() <= 0 {
			t.Fatalf("%s: no lease", file)
		}
	}

	// Re-entrant obtain: the owner (token prefix) takes it again, no one else.
	if v := val(run("reentrant_obtain.lua", []string{"re:lock"}, "ownerA-1", 30000, 6)); v == nil {
		t.Fatal("reentrant obtain failed")
	}
	if v := val(run("reentrant_obtain.lua", []string{"re:lock"}, "ownerA-2", 30000, 6)); v == nil {
		t.Fatal("the owner could not obtain again")
	}
	eq(t, val(run("reentrant_obtain.lua", []string{"re:lock"}, "ownerB-1", 30000, 6)), nil)
	eq(t, d.Get(ctx, "re:lock").Val(), "ownerA-2")

	// Several resources at once: all free, then all taken; extended only
	// while all are ours.
	mk := []string{"ma1:lock", "ma2:lock"}
	eq(t, val(run("multi_acquire.lua", mk, "t", 30000)), int64(2))
	eq(t, val(run("multi_acquire.lua", mk, "u", 30000)), int64(0))
	eq(t, val(run("multi_extend.lua", mk, "u", 90000)), int64(0))
	eq(t, val(run("multi_extend.lua", mk, "t", 90000)), int64(2))
	if d.PTTL(ctx, "ma2:lock").Val() < 60*time.Second {
		t.Fatal("multi extend did not extend")
	}

	// Releases: the wrong token changes nothing, the right one releases.
	for _, file := range []string{"canonical_release.lua", "release_neg1.lua", "pcall_release.lua"} {
		key := strings.TrimSuffix(file, ".lua") + ":lock"
		d.Set(ctx, key, "mine", time.Minute)
		eq(t, val(run(file, []string{key}, "theirs")), int64(0))
		eq(t, d.Get(ctx, key).Val(), "mine")
		eq(t, val(run(file, []string{key}, "mine")), int64(1))
		eq(t, d.Exists(ctx, key).Val(), int64(0))
	}
	eq(t, val(run("release_neg1.lua", []string{"gone:lock"}, "x")), int64(-1))

	// Renewals: only the holder's token extends the lease.
	d.Set(ctx, "lease:lock", "mine", 2*time.Second)
	eq(t, val(run("refresh.lua", []string{"lease:lock"}, "theirs", 60000)), int64(0))
	eq(t, val(run("refresh.lua", []string{"lease:lock"}, "mine", 60000)), int64(1))
	if d.PTTL(ctx, "lease:lock").Val() < 30*time.Second {
		t.Fatal("refresh did not extend the lease")
	}
	eq(t, val(run("extend.lua", []string{"lease:lock"}, "theirs", 60000, "0")), int64(0))
	eq(t, val(run("extend.lua", []string{"lease:lock"}, "mine", 60000, "0")), int64(1))
	if d.PTTL(ctx, "lease:lock").Val() < 90*time.Second {
		t.Fatal("extend did not add to the lease")
	}

	// Multi-key releases.
	for _, file := range []string{"multi_mget_release.lua", "multi_each_release.lua", "pair_mget_release.lua"} {
		keys := []string{"m1:lock", "m2:lock"}
		d.Set(ctx, keys[0], "t", time.Minute)
		d.Set(ctx, keys[1], "other", time.Minute)
		v := val(run(file, keys, "t"))
		if file == "multi_each_release.lua" {
			eq(t, v, int64(1)) // only its own
			eq(t, d.Exists(ctx, keys...).Val(), int64(1))
			d.Set(ctx, keys[0], "t", time.Minute)
		} else {
			eq(t, v, int64(0)) // all or nothing
			eq(t, d.Exists(ctx, keys...).Val(), int64(2))
		}
		d.Set(ctx, keys[1], "t", time.Minute)
		eq(t, val(run(file, keys, "t")), int64(2))
		eq(t, d.Exists(ctx, keys...).Val(), int64(0))
	}

	// The reentrant hash lock: take twice, renew, release twice.
	hk := []string{"h:lock", "redisson_lock__channel:{h}"}
	eq(t, val(run("hash_lock.lua", hk[:1], 30000, "owner-1")), nil)
	eq(t, val(run("hash_lock.lua", hk[:1], 30000, "owner-1")), nil)
	if v := val(run("hash_lock.lua", hk[:1], 30000, "owner-2")); v == nil {
		t.Fatal("a second owner took the hash lock")
	}
	eq(t, val(run("hash_renew.lua", hk[:1], 60000, "owner-2")), int64(0))
	eq(t, val(run("hash_renew.lua", hk[:1], 60000, "owner-1")), int64(1))
	eq(t, val(run("hash_unlock.lua", hk, "unlocked", 30000, "owner-2")), nil)
	eq(t, val(run("hash_unlock.lua", hk, "unlocked", 30000, "owner-1")), int64(0))
	eq(t, val(run("hash_unlock.lua", hk, "unlocked", 30000, "owner-1")), int64(1))
	eq(t, d.Exists(ctx, "h:lock").Val(), int64(0))

	for _, ev := range e.p.Events(100) {
		t.Errorf("a guarded or acquire script was recorded: %+v", ev)
	}
}

// Blind scripts run under the monitor, which refuses their call on the
// lock when it runs (NOTOWNER, naming the key and the script's line),
// whether sent as EVAL or as EVALSHA of a script loaded through
// lockproxy.
func TestScriptsBlindRefused(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	c := e.client()
	d := e.direct()
	for _, tc := range []struct {
		file string
		keys []string
		line string
		verb string
	}{
		{"blind_del.lua", []string{"res:lock"}, "line 2 (DEL)", "deletes"},
		{"blind_del_before_compare.lua", []string{"res:lock"}, "line 3 (DEL)", "deletes"},
		{"blind_const_compare.lua", []string{"res:lock"}, "line 3 (DEL)", "deletes"},
		{"blind_other_key.lua", []string{"res:lock", "other:lock"}, "line 3 (DEL)", "deletes"},
		{"blind_inverted.lua", []string{"res:lock"}, "line 3 (DEL)", "deletes"},
		{"blind_renew.lua", []string{"res:lock"}, "line 2 (PEXPIRE)", "changes the expiry of"},
		{"blind_set.lua", []string{"res:lock"}, "line 2 (SET)", "overwrites"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d.Set(ctx, "res:lock", "locked", time.Minute)
			d.Set(ctx, "other:lock", "tok", time.Minute)
			body := luaFile(t, tc.file)
			sha := sha1hex(body)
			line := strings.TrimSuffix(strings.Fields(tc.line)[1], ":")
			want := []string{`"res:lock" inside a script`, "script: " + sha + ", on @user_script:" + line + "."}
			args := []interface{}{"tok", 100}
			errPrefix(t, c.Eval(ctx, body, tc.keys, args...).Err(), "NOTOWNER lockproxy refused ", want...)
			// Loaded through lockproxy, then called by SHA1.
			eq(t, c.ScriptLoad(ctx, body).Val(), sha)
			errPrefix(t, c.EvalSha(ctx, sha, tc.keys, args...).Err(), "NOTOWNER lockproxy refused ", want...)
			errPrefix(t, redis.NewScript(body).Run(ctx, c, tc.keys, args...).Err(), "NOTOWNER")
			eq(t, d.Get(ctx, "res:lock").Val(), "locked")
			if ttl := d.PTTL(ctx, "res:lock").Val(); ttl < 50*time.Second {
				t.Fatalf("the lease changed: %v", ttl)
			}
		})
	}
	// A key the script names itself, from ARGV.
	d.Set(ctx, "res:lock", "locked", time.Minute)
	errPrefix(t, c.Eval(ctx, luaFile(t, "named_argv_del.lua"), nil, "res:lock").Err(), "NOTOWNER",
		`DEL of "res:lock" inside a script`)
	eq(t, c.Eval(ctx, luaFile(t, "named_argv_del.lua"), nil, "plain").Val(), int64(0))
	eq(t, d.Get(ctx, "res:lock").Val(), "locked")

	// Inside MULTI the script runs at EXEC: its element is the refusal,
	// its siblings run.
	r := dialRaw(t, e.addr)
	eq(t, r.do("MULTI"), "+OK\r\n")
	eq(t, r.do("SET", "plain", "1"), "+QUEUED\r\n")
	eq(t, r.do("EVAL", luaFile(t, "blind_del.lua"), "1", "res:lock"), "+QUEUED\r\n")
	mustContain(t, r.do("EXEC"), "-NOTOWNER")
	eq(t, d.Exists(ctx, "plain", "res:lock").Val(), int64(2))
}

// Under the monitor a rule's scripts: setting no longer matters for EVAL
// and EVALSHA (every call is checked when it runs, whatever the script
// looks like); release: observe lets a script change the lock as it lets
// a plain command.
func TestScriptsSettings(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "so:*"
    scripts: observe
  - pattern: "sr:*"
    scripts: reject
  - pattern: "ro:*"
    release: observe
  - pattern: "*:lock"
`))
	c := e.client()
	d := e.direct()
	blind := luaFile(t, "blind_del.lua")
	dynamic := luaFile(t, "unknown_dynamic.lua")
	d.Set(ctx, "ro:a", "x", 0)
	eq(t, c.Eval(ctx, blind, []string{"ro:a"}).Val(), int64(1))
	for _, k := range []string{"so:a", "sr:a", "u:lock"} {
		d.Set(ctx, k, "x", 0)
		errPrefix(t, c.Eval(ctx, blind, []string{k}).Err(), "NOTOWNER")
		errPrefix(t, c.Eval(ctx, dynamic, []string{k}, "DEL").Err(), "NOTOWNER", "script: "+sha1hex(dynamic)+", on @user_script:2.")
		eq(t, d.Exists(ctx, k).Val(), int64(1))
	}
}

// An EVALSHA of a script lockproxy has not seen (loaded straight into
// Valkey) cannot run under the monitor: NOSCRIPT, whatever unknown_sha
// says, so a client library falls back to EVAL and the body runs
// monitored.
func TestScriptsUnknownSHA(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "a:*"
    unknown_sha: allow
  - pattern: "r:*"
    unknown_sha: reject
`))
	c := e.client()
	d := e.direct()
	blind := luaFile(t, "blind_del.lua")
	guarded := luaFile(t, "canonical_release.lua")
	sha := d.ScriptLoad(ctx, blind).Val()
	d.ScriptLoad(ctx, guarded)
	for _, k := range []string{"a:x", "r:x", "plain"} {
		d.Set(ctx, k, "tok", 0)
		// (go-redis replaces a NOSCRIPT error's text by its own: read the wire.)
		got := dialRaw(t, e.addr).do("EVALSHA", sha, "1", k)
		mustContain(t, got, "-NOSCRIPT lockproxy has not seen script \""+sha+"\"")
		eq(t, d.Get(ctx, k).Val(), "tok")
	}
	eq(t, len(e.p.Events(10)), 0)
	// go-redis falls back to EVAL on NOSCRIPT: the guarded script then
	// passes, the blind one is refused, and both are known from then on.
	eq(t, redis.NewScript(guarded).Run(ctx, c, []string{"r:x"}, "other").Val(), int64(0))
	eq(t, c.EvalSha(ctx, sha1hex(guarded), []string{"r:x"}, "tok").Val(), int64(1))
	d.Set(ctx, "r:x", "tok", 0)
	errPrefix(t, redis.NewScript(blind).Run(ctx, c, []string{"r:x"}).Err(), "NOTOWNER")
	errPrefix(t, c.EvalSha(ctx, sha, []string{"r:x"}).Err(), "NOTOWNER")
	eq(t, d.Get(ctx, "r:x").Val(), "tok")
	// Keys no rule matches: not lockproxy's business.
	eq(t, c.EvalSha(ctx, sha, []string{"plain"}).Val(), int64(1))
}

// A function library loaded through lockproxy runs under the monitor,
// function by function (issue 26 item 4): FCALL by name, any letter case.
func TestScriptsFunctionLibrary(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "*:lock"
    unknown_sha: reject
`))
	c := e.client()
	d := e.direct()
	eq(t, c.FunctionLoad(ctx, luaFile(t, "locklib.lua")).Val(), "locklib")
	eq(t, c.FCall(ctx, "lock_acquire", []string{"f:lock"}, "tok", 30000).Val(), "OK")
	if err := c.FCall(ctx, "lock_acquire", []string{"f:lock"}, "other", 30000).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("second acquire: %v", err)
	}
	eq(t, c.FCall(ctx, "lock_release", []string{"f:lock"}, "other").Val(), int64(0))
	eq(t, c.FCall(ctx, "LOCK_RELEASE", []string{"f:lock"}, "tok").Val(), int64(1))
	d.Set(ctx, "f:lock", "theirs", time.Minute)
	errPrefix(t, c.FCall(ctx, "lock_force", []string{"f:lock"}).Err(),
		`NOTOWNER lockproxy refused DEL of "f:lock" inside a script`, "script: lock_force, on @user_function:22.")
	errPrefix(t, c.FCall(ctx, "LOCK_FORCE", []string{"f:lock"}).Err(), `NOTOWNER`, "script: lock_force, on @user_function:22.")
	eq(t, d.Get(ctx, "f:lock").Val(), "theirs")
	eq(t, c.FCallRO(ctx, "lock_peek", []string{"f:lock"}).Err() != nil, true) // no such function: Valkey answers

	// A library loaded straight into Valkey has no monitor inside: its
	// functions are not run through lockproxy.
	d.FunctionLoad(ctx, "#!lua name=direct\nredis.register_function('sneaky', function(keys) return redis.call('DEL', keys[1]) end)")
	errPrefix(t, c.FCall(ctx, "sneaky", []string{"f:lock"}).Err(), `ERR Function not found, or its library was loaded around lockproxy`, "FUNCTION LOAD REPLACE")
	eq(t, d.Get(ctx, "f:lock").Val(), "theirs")
	// Replaced through lockproxy with a guarded version, it passes.
	eq(t, c.FunctionLoadReplace(ctx, "#!lua name=direct\nredis.register_function('sneaky', function(keys, args)\n  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end\n  return 0\nend)").Val(), "direct")
	eq(t, c.FCall(ctx, "sneaky", []string{"f:lock"}, "theirs").Val(), int64(1))
}

// A function that takes a lock of a rule with a fence gets its grant, as
// a monitored EVAL does: the previous holder's token is superseded.
func TestScriptsFunctionAcquireFenced(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
  - pattern: "{*}:omutex"
    scripts: observe
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
`))
	c := e.client()
	d := e.direct()
	eq(t, c.FunctionLoad(ctx, luaFile(t, "locklib.lua")).Val(), "locklib")
	for _, k := range []string{"{o1}:mutex", "{o2}:omutex"} {
		eq(t, c.FCall(ctx, "lock_acquire", []string{k}, "tok", 30000).Val(), "OK")
		eq(t, c.Do(ctx, "LOCKPROXY", "FENCE", k).Val(), int64(1))
		eq(t, d.Get(ctx, k[:4]+":fence").Val(), "1")
		eq(t, c.FCall(ctx, "lock_release", []string{k}, "other").Val(), int64(0))
		eq(t, c.FCall(ctx, "lock_release", []string{k}, "tok").Val(), int64(1))
	}
}

// EchoMQ's fence lives in its queue scripts: claim bumps the job's
// attempts, complete refuses a stale count with EMQSTALE. Their keys are
// no lock keys, so lockproxy forwards them untouched and the error reaches
// the client verbatim.
func TestScriptsEchoMQPassThrough(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	r := dialRaw(t, e.addr)
	claim, complete := luaFile(t, "echomq_claim.lua"), luaFile(t, "echomq_complete.lua")
	pending, active, job, done := "emq:{q}:pending", "emq:{q}:active", "emq:{q}:job:7", "emq:{q}:done"
	d.ZAdd(ctx, pending, redis.Z{Score: 1, Member: "7"})
	d.HSet(ctx, job, "payload", "hello")
	now := func() string { return time.Now().Format("20060102150405") }

	// Worker A claims (attempts 1), stalls; the reaper puts the job back and
	// worker B claims it (attempts 2).
	eq(t, r.do("EVAL", claim, "2", pending, active, now(), "30000", "emq:{q}:job:"), "*3\r\n"+bulk("7")+bulk("hello")+":1\r\n")
	d.ZAdd(ctx, pending, redis.Z{Score: 1, Member: "7"})
	eq(t, r.do("EVALSHA", sha1hex(claim), "2", pending, active, now(), "30000", "emq:{q}:job:"), "*3\r\n"+bulk("7")+bulk("hello")+":2\r\n")
	// A completes with its stale count: refused by the script, verbatim.
	eq(t, r.do("EVAL", complete, "3", active, job, done, "7", "1"), "-EMQSTALE complete token mismatch\r\n")
	eq(t, d.HGet(ctx, job, "state").Val(), "active")
	// B completes with the current count.
	eq(t, r.do("EVALSHA", sha1hex(complete), "3", active, job, done, "7", "2"), ":1\r\n")
	eq(t, d.HGet(ctx, job, "state").Val(), "done")
	eq(t, d.LRange(ctx, done, 0, -1).Val()[0], "7")
	eq(t, len(e.p.Events(10)), 0)
}

// SCRIPT DEBUG YES or SYNC puts Valkey's Lua debugger on the connection
// the next EVAL runs on: the debugger runs the commands and Lua typed into
// it unmonitored, and through lockproxy that connection is one other
// clients' scripts share (on main the flag was set there: +OK). NO stays
// Valkey's, and a wrong argument gets Valkey's error.
func TestScriptDebugRefused(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	c := dialRaw(t, e.addr)
	dv := dialRaw(t, e.srv.Addr)
	for _, mode := range []string{"YES", "sync"} {
		mustContain(t, c.do("SCRIPT", "DEBUG", mode), "-LOCKED lockproxy refused SCRIPT DEBUG: ")
	}
	eq(t, c.do("SCRIPT", "DEBUG", "NO"), "+OK\r\n")
	eq(t, c.do("SCRIPT", "DEBUG", "maybe"), dv.do("SCRIPT", "DEBUG", "maybe"))
	eq(t, c.do("EVAL", "return 'hello'", "0"), "$5\r\nhello\r\n")
}
