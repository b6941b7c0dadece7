package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 18, item 2 (issue 26: checked when the write runs): a script's write
// to a guarded key passes the same fence as a plain write, in the same
// atomic step.
func TestScriptFencedWrites(t *testing.T) {
	for _, check := range []string{"current", "highest"} {
		t.Run(check, func(t *testing.T) {
			e := newEnv(t, rulesOptions(t, fenceRule(check, "reject")))
			d := e.direct()
			a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
			write := "redis.call('INCR', 'ran:' .. ARGV[2])\nredis.call('SET', KEYS[1], ARGV[1])\nreturn 'written'"
			eq(t, a.do("SET", "{o}:lock", "a", "NX", "PX", "100"), "+OK\r\n")
			eq(t, a.do("EVAL", write, "1", "{o}:data", "by-a", "a"), bulk("written"))
			time.Sleep(150 * time.Millisecond) // a stalls past its lease
			eq(t, b.do("SET", "{o}:lock", "b", "NX", "PX", "10000"), "+OK\r\n")
			eq(t, b.do("EVAL", write, "1", "{o}:data", "by-b", "b"), bulk("written"))
			got := a.do("EVAL", write, "1", "{o}:data", "late-a", "a2")
			mustContain(t, got, "-STALE lockproxy refused a write to {o}:data with fencing token 1")
			eq(t, d.Get(ctx, "{o}:data").Val(), "by-b")
			// The check runs when the write does: the script's earlier
			// calls ran.
			eq(t, d.Exists(ctx, "ran:a2").Val(), int64(1))
			// The same through EVALSHA, as client libraries send it.
			sha := sha1hex(write)
			mustContain(t, a.do("EVALSHA", sha, "1", "{o}:data", "late-a", "a3"), "-STALE")
			eq(t, b.do("EVALSHA", sha, "1", "{o}:data", "by-b2", "b2"), bulk("written"))
			eq(t, d.Get(ctx, "{o}:data").Val(), "by-b2")
			eq(t, d.Exists(ctx, "ran:a3").Val(), int64(1))
			// A writer without a grant: unfenced_writes: reject.
			mustContain(t, dialRaw(t, e.addr).do("EVAL", write, "1", "{o}:data", "x", "c"), "-UNFENCED lockproxy refused SET of \"{o}:data\" inside a script")
			// A key it names itself from ARGV is fenced too.
			named := "return redis.call('SET', ARGV[1], 'x')"
			mustContain(t, a.do("EVAL", named, "0", "{o}:items"), "-STALE")
			eq(t, b.do("EVAL", named, "0", "{o}:items"), "+OK\r\n")
			// Scripts writing no guarded key are not wrapped: EVALSHA of
			// the client's own SHA1.
			eq(t, a.do("EVAL", "return redis.call('SET', KEYS[1], 'x')", "1", "{o}:free"), "+OK\r\n")
		})
	}
}

// check: highest marks per lock by default: after B wrote {o1}:balance
// with a newer token, stale A cannot write {o1}:ledger either; mark: key
// keeps one mark per key.
func TestFenceMarkPerLock(t *testing.T) {
	for _, tc := range []struct {
		mark   string
		ledger string // A's write to {o1}:items after B wrote {o1}:data
	}{{"lock", "-STALE lockproxy refused a write to {o1}:items with fencing token 1: the keys its lock guards have already accepted token 2"}, {"key", ":1\r\n"}} {
		t.Run(tc.mark, func(t *testing.T) {
			e := newEnv(t, rulesOptions(t, fenceRule("highest", "reject", tc.mark)))
			a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
			eq(t, a.do("SET", "{o1}:lock", "a", "NX", "PX", "100"), "+OK\r\n") // token 1
			time.Sleep(150 * time.Millisecond)
			eq(t, b.do("SET", "{o1}:lock", "b", "NX", "PX", "10000"), "+OK\r\n") // token 2
			eq(t, b.do("SET", "{o1}:data", "35"), "+OK\r\n")
			mustContain(t, a.do("RPUSH", "{o1}:items", "34"), tc.ledger)
			mustContain(t, a.do("SET", "{o1}:data", "34"), "-STALE")
		})
	}
}

// The wrapper a fenced script runs in answers what the script answers
// alone, byte for byte: replies, runtime errors with their line numbers
// and the client's SHA1, redis.error_reply, pcall, RESP3, #!lua flags.
func TestScriptWrappedByteForByte(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "allow")))
	for _, body := range []string{
		"redis.call('SET', KEYS[1], ARGV[1])\nreturn {1, 'two', {3}, false, redis.status_reply('OK')}",
		"redis.call('SET', KEYS[1], 'x')\nlocal t = nil\nreturn t.field",
		"redis.call('SET', KEYS[1], 'x')\n\n\nreturn redis.call('INCR', KEYS[1])",
		"redis.call('SET', KEYS[1], 'x')\nreturn redis.error_reply('MYERR custom text')",
		"return redis.pcall('HSET', KEYS[1], 'f')",
		"redis.call('SET', KEYS[1], 'x')\nerror('plain')",
		"redis.call('SET', KEYS[1], 'x')\nerror({err = 'TABLE err'})",
		"redis.call('SET', KEYS[1], 'x')\nreturn error('level two', 2)",
		"redis.setresp(3)\nredis.call('SET', KEYS[1], '1.5')\nreturn {redis.call('HGETALL', 'nosuch'), redis.call('INCRBYFLOAT', KEYS[1], '1')}",
		"redis.call('SET', KEYS[1], 'x')\nreturn {#KEYS, #ARGV, KEYS[1], ARGV[#ARGV], select('#', ...)}",
		"#!lua flags=allow-cross-slot-keys\nredis.call('SET', KEYS[1], 'x')\nreturn redis.call('GET', 'elsewhere')",
		"#!lua\nredis.call('SET', KEYS[1], 'x')\nreturn undefined_global",
		"local n = 0\nfor i = 1, 3 do n = n + i end\nredis.call('SET', KEYS[1], n)\nreturn n -- no newline at the end",
		// Issue 26: the rest of redis/server is Valkey's, and the sandbox's errors are Valkey's words.
		"redis.call('SET', KEYS[1], 'x')\nredis.log(redis.LOG_WARNING, 'monitored')\nreturn {redis.sha1hex('x'), redis.REPL_ALL, redis.REPL_NONE, redis.LOG_NOTICE, tostring(redis.acl_check_cmd('GET', KEYS[1])), server.status_reply('S').ok, type(redis.breakpoint), type(server.setresp)}",
		"redis.call('SET', KEYS[1], 'x')\nreturn redis.pcall('NOSUCHCMD', KEYS[1])",
		"redis.call('SET', KEYS[1], 'x')\nlocal ok, e = pcall(redis.call, 'INCR', KEYS[1])\nreturn {tostring(ok), e.err}",
		"redis.call('SET', KEYS[1], 'x')\n\nnewglobal = 1",
		"redis.call('SET', KEYS[1], 'x')\nreturn {type(loadstring('return 1')), loadstring('return ARGV[1]')(), type(getfenv(0).redis), rawequal(_G, getfenv())}",
		"redis.call('SET', KEYS[1], 'x')\nreturn redis.call('GET', KEYS[1], 'extra')",
	} {
		sameReplies(t, e, body, true, "{w}:data", "v1", "v2")
	}
	if !strings.Contains(dialRaw(t, e.addr).do("EVAL", "redis.call('SET', KEYS[1], 'x')\nreturn t.x", "1", "{w}:data"), "user_script:2:") {
		t.Fatal("line number")
	}
	// Each body ran monitored through the proxy: Valkey holds the 19
	// clients' scripts (sent directly), 20 monitored texts and lockproxy's
	// own 4, nothing else: the primary's run id is learned with INFO, and
	// its epoch established by the grants (docs/failover.md).
	info := e.direct().Info(ctx, "memory").Val()
	if !strings.Contains(info, "number_of_cached_scripts:43\r\n") {
		t.Fatalf("cached scripts: %s", info[strings.Index(info, "number_of_cached_scripts"):][:32])
	}
}

// Issue 18, item 4: fenced commands keep their meaning. A blocking write
// to a guarded key is refused with a sentence (inside the fence check it
// would answer at once instead of waiting); commands past Lua's unpack
// limit run.
func TestFencedBlockingRefused(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "{q}:lock", "a", "NX", "PX", "30000"), "+OK\r\n")
	mustContain(t, a.do("BLPOP", "{q}:items", "5"), "-LOCKED lockproxy refused BLPOP: it writes \"{q}:items\", a key a lock guards")
	mustContain(t, a.do("BLMOVE", "{q}:items", "{q}:data", "LEFT", "RIGHT", "1"), "-LOCKED lockproxy refused BLMOVE")
	eq(t, a.do("LPOP", "{q}:items"), "$-1\r\n")         // the non-blocking form is fenced as usual
	eq(t, a.do("BLPOP", "{q}:free", "0.01"), "*-1\r\n") // not guarded: blocks as Valkey does
}

// Commands past Lua's unpack limit (about 8000 values) run through the
// fence and the release as Valkey runs them.
func TestFencedUnpackLimit(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	d := e.direct()
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "{q}:lock", "a", "NX", "PX", "30000"), "+OK\r\n")
	// MSET of ~4,000 keys, one guarded.
	args := []string{"MSET", "{q}:data", "v"}
	for i := range 4000 {
		args = append(args, "{q}:plain:"+strconv.Itoa(i), "x")
	}
	eq(t, a.do(args...), "+OK\r\n")
	eq(t, d.Get(ctx, "{q}:plain:3999").Val(), "x")
	eq(t, d.Get(ctx, "{q}:data").Val(), "v")
	// The holder's DEL of 8,000 plain keys and its lock.
	del := []string{"DEL"}
	for i := range 8000 {
		d.Set(ctx, "p:"+strconv.Itoa(i), "x", 0)
		del = append(del, "p:"+strconv.Itoa(i))
	}
	eq(t, a.do(append(del, "{q}:lock")...), ":8001\r\n")
	eq(t, d.Exists(ctx, "{q}:lock", "p:0", "p:7999").Val(), int64(0))
	// RPUSH of 9,000 values to a guarded list: one command, in parts.
	eq(t, a.do("SET", "{q}:lock", "a2", "NX", "PX", "30000"), "+OK\r\n")
	push := []string{"RPUSH", "{q}:items"}
	for i := range 9000 {
		push = append(push, strconv.Itoa(i))
	}
	eq(t, a.do(push...), ":9000\r\n")
	eq(t, d.LIndex(ctx, "{q}:items", 8999).Val(), "8999")
}

// The wrapper's second form (a script that may take, release or renew a
// lock: grants and records after the body) answers byte for byte too.
func TestScriptAcquireWrappedByteForByte(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	for _, body := range []string{
		"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 10000) then return redis.status_reply('OK') end\nreturn false",
		"if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end\nlocal t = nil\nreturn t.x",
		"if redis.call('SET', KEYS[1], ARGV[1], 'NX') then\n  return redis.error_reply('TAKEN but no')\nend\nreturn {1, 'two', {3.5}}",
		"redis.setresp(3)\nif redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end\nreturn {redis.call('HGETALL', 'nosuch'), {double = 1.5}}",
		"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\nreturn {#KEYS, #ARGV, ARGV[1]}",
		"#!lua\nif redis.call('SET', KEYS[1], ARGV[1], 'NX') then error('after taking it') end\nreturn 0",
	} {
		sameReplies(t, e, body, false, "d:lock", "tok")
	}
}

// sameReplies runs body (with one key, then its arguments) on Valkey and
// through the proxy, in RESP2 and RESP3, with the key deleted before
// each, and requires the same bytes; evalsha: again by the client's SHA1
// through the proxy.
func sameReplies(t *testing.T, e *env, body string, evalsha bool, key string, args ...string) {
	t.Helper()
	call := append([]string{body, "1", key}, args...)
	for _, proto := range []string{"2", "3"} {
		direct, proxied := dialRaw(t, e.srv.Addr), dialRaw(t, e.addr)
		direct.do("HELLO", proto)
		proxied.do("HELLO", proto)
		e.direct().Del(ctx, key)
		want := direct.do(append([]string{"EVAL"}, call...)...)
		e.direct().Del(ctx, key)
		if got := proxied.do(append([]string{"EVAL"}, call...)...); got != want {
			t.Errorf("RESP%s %q:\n got %q\nwant %q", proto, body, got, want)
		}
		if !evalsha {
			continue
		}
		call[0] = sha1hex(body)
		if got := proxied.do(append([]string{"EVALSHA"}, call...)...); got != want {
			t.Errorf("EVALSHA RESP%s %q:\n got %q\nwant %q", proto, body, got, want)
		}
		call[0] = body
	}
}

// A script that declares flags=no-writes runs as it came: Valkey refuses
// its writes, and would refuse a wrapper's own (a holder's fence mark).
func TestScriptNoWritesNotWrapped(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("highest", "allow")))
	body := "#!lua flags=no-writes\nif ARGV[1] == 'w' then redis.call('SET', KEYS[1], 'x') end\nreturn redis.call('GET', KEYS[1])"
	holder, direct := dialRaw(t, e.addr), dialRaw(t, e.srv.Addr)
	eq(t, holder.do("SET", "{n}:lock", "h", "NX", "PX", "30000"), "+OK\r\n")
	for _, arg := range []string{"r", "w"} {
		eq(t, holder.do("EVAL", body, "1", "{n}:data", arg), direct.do("EVAL", body, "1", "{n}:data", arg))
	}
}

// Inside MULTI a wrapped script is checked when EXEC runs it: a stale
// one fails in its element and writes nothing; its siblings run.
func TestScriptFencedInMulti(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	d := e.direct()
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	write := "redis.call('SET', KEYS[1], ARGV[1])\nreturn 'written'"
	eq(t, a.do("SET", "{m}:lock", "a", "NX", "PX", "100"), "+OK\r\n")
	time.Sleep(150 * time.Millisecond)
	eq(t, b.do("SET", "{m}:lock", "b", "NX", "PX", "10000"), "+OK\r\n")
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("EVAL", write, "1", "{m}:data", "late-a"), "+QUEUED\r\n")
	eq(t, a.do("SET", "{m}:free", "x"), "+QUEUED\r\n")
	got := a.do("EXEC")
	mustContain(t, got, "-STALE lockproxy refused a write to {m}:data with fencing token 1")
	mustContain(t, got, "+OK\r\n")
	eq(t, d.Exists(ctx, "{m}:data").Val(), int64(0))
	eq(t, b.do("MULTI"), "+OK\r\n")
	eq(t, b.do("EVAL", write, "1", "{m}:data", "by-b"), "+QUEUED\r\n")
	eq(t, b.do("EXEC"), "*1\r\n"+bulk("written"))
	eq(t, d.Get(ctx, "{m}:data").Val(), "by-b")
}

// A script that does not compile runs monitored too (the body is the
// chunk's own top level, so no text check decides whether it could close
// a block of the monitor's), and Valkey's compile error reads as it does
// for the script alone, byte for byte.
func TestScriptUnparsedNotWrapped(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "allow")))
	sameReplies(t, e, "redis.call('SET', KEYS[1], 'x')\nif ARGV[1] then", false, "{u}:data", "a")
	sameReplies(t, e, "redis.call('SET', KEYS[1], 'x') return (", false, "{u}:data", "a")
	sameReplies(t, e, "end redis.call('SET', KEYS[1], 'x')", false, "{u}:data", "a")
	sameReplies(t, e, "(redis.call)('SET', KEYS[1], 'x')", false, "{u}:data", "a")
	sameReplies(t, e, "; return 1", false, "{u}:data", "a")
}
