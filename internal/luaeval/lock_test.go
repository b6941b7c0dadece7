package luaeval

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// gopher-lua states are created and closed per script; a leaked
	// goroutine would mean a state outlived its script.
	goleak.VerifyTestMain(m)
}

// t0 is an arbitrary fixed instant for the fake clock.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// op is one step of an offline test: a plain command, a script, or a move
// of the fake clock; want is the exact reply (ignored for clock moves).
type op struct {
	advance time.Duration
	do      []string
	script  string
	keys    []string
	args    []string
	want    string
}

func advance(d time.Duration) op { return op{advance: d} }
func cmd(want string, args ...string) op {
	return op{do: args, want: want}
}
func evalOp(want, body string, keys []string, args ...string) op {
	return op{script: body, keys: keys, args: args, want: want}
}

func runOps(t *testing.T, s *Store, ops []op) {
	t.Helper()
	for i, o := range ops {
		var got []byte
		switch {
		case o.advance != 0:
			s.Advance(o.advance)
			continue
		case o.do != nil:
			got = s.Do(o.do...)
		default:
			got = s.Eval(o.script, o.keys, o.args)
		}
		if string(got) != o.want {
			what := fmt.Sprintf("%q", o.do)
			if o.do == nil {
				what = fmt.Sprintf("EVAL %.40q keys=%q args=%q", o.script, o.keys, o.args)
			}
			t.Errorf("step %d %s:\n got  %q\n want %q", i, what, got, o.want)
		}
	}
}

// scriptErr is the reply Valkey sends when a redis.call inside body fails
// with msg on the given line.
func scriptErr(msg, body string, line int) string {
	return fmt.Sprintf("-%s script: %s, on @user_script:%d.\r\n", msg, SHA1Hex(body), line)
}

func TestLockScripts(t *testing.T) {
	lock := []string{"lock"}
	lockFence := []string{"lock", "fence"}
	tests := []struct {
		name string
		ops  []op
	}{
		{"seed: A's lease lapses, B acquires, A's late release is refused", []op{
			evalOp("+OK\r\n", acquireScript, lockFence, "abc", "1000"),
			// Valkey keeps a key until now > expiry: at the exact
			// millisecond it still exists with PTTL 0.
			advance(1000 * time.Millisecond),
			cmd(":0\r\n", "PTTL", "lock"),
			cmd("$3\r\nabc\r\n", "GET", "lock"),
			advance(time.Millisecond),
			cmd(":-2\r\n", "PTTL", "lock"),
			evalOp("+OK\r\n", acquireScript, lockFence, "xyz", "1000"),
			evalOp(":0\r\n", releaseScript, lock, "abc"),
			cmd("$3\r\nxyz\r\n", "GET", "lock"),
			cmd(":1000\r\n", "PTTL", "lock"),
			cmd("$1\r\n2\r\n", "GET", "fence"),
			cmd(":-1\r\n", "PTTL", "fence"), // the fencing counter never expires
		}},
		{"A releases before its lease ends", []op{
			evalOp("+OK\r\n", acquireScript, lockFence, "abc", "1000"),
			advance(999 * time.Millisecond),
			evalOp(":1\r\n", releaseScript, lock, "abc"),
			cmd(":0\r\n", "EXISTS", "lock"),
			evalOp(":0\r\n", releaseScript, lock, "abc"),
			cmd("$1\r\n1\r\n", "GET", "fence"),
		}},
		{"release with the wrong token leaves the lock", []op{
			cmd("+OK\r\n", "SET", "lock", "abc", "NX", "PX", "5000"),
			evalOp(":0\r\n", releaseScript, lock, "xyz"),
			evalOp(":0\r\n", releaseScript, []string{"other"}, "abc"),
			cmd("$3\r\nabc\r\n", "GET", "lock"),
		}},
		{"acquire replies exactly like SET NX", []op{
			evalOp("+OK\r\n", acquireScript, lockFence, "t1", "30000"),
			evalOp("$-1\r\n", acquireScript, lockFence, "t2", "30000"),
			cmd("$-1\r\n", "SET", "lock", "t2", "NX", "PX", "30000"),
			cmd("$1\r\n1\r\n", "GET", "fence"), // only the success counted
			evalOp(":1\r\n", releaseScript, lock, "t1"),
			evalOp("+OK\r\n", acquireScript, lockFence, "t3", "30000"),
			cmd("$1\r\n2\r\n", "GET", "fence"),
			evalOp(scriptErr("ERR invalid expire time in 'set' command", acquireScript, 1), acquireScript, []string{"l2", "fence"}, "t", "0"),
			cmd("$1\r\n2\r\n", "GET", "fence"), // the failed SET raised before INCR
		}},
		{"renewal is token-checked", []op{
			evalOp("+OK\r\n", acquireScript, lockFence, "abc", "1000"),
			advance(800 * time.Millisecond),
			evalOp(":1\r\n", renewScript, lock, "abc", "1000"),
			cmd(":1000\r\n", "PTTL", "lock"),
			advance(900 * time.Millisecond),
			evalOp(":0\r\n", renewScript, lock, "xyz", "60000"),
			cmd(":100\r\n", "PTTL", "lock"),
			advance(101 * time.Millisecond),
			evalOp(":0\r\n", renewScript, lock, "abc", "1000"), // lapsed: too late
			cmd(":0\r\n", "EXISTS", "lock"),
		}},
		{"fenced writes reject stale tokens", []op{
			evalOp("+OK\r\n", fencedWriteScript, []string{"data", "hi"}, "5", "v5"),
			evalOp("+OK\r\n", fencedWriteScript, []string{"data", "hi"}, "7", "v7"),
			evalOp("-STALE fencing token 6 < 7\r\n", fencedWriteScript, []string{"data", "hi"}, "6", "v6"),
			evalOp("+OK\r\n", fencedWriteScript, []string{"data", "hi"}, "7", "v7b"),
			evalOp("-ERR fencing token is not a number\r\n", fencedWriteScript, []string{"data", "hi"}, "x", "vx"),
			cmd("*2\r\n$3\r\nv7b\r\n$1\r\n7\r\n", "MGET", "data", "hi"),
		}},
		{"EchoMQ claim and complete", []op{
			evalOp(":1\r\n", claimScript, []string{"job:1", "active"}, "1000", "1"),
			evalOp(":2\r\n", claimScript, []string{"job:1", "active"}, "2000", "1"),
			cmd("*4\r\n$8\r\nattempts\r\n$1\r\n2\r\n$5\r\nstate\r\n$6\r\nactive\r\n", "HGETALL", "job:1"),
			cmd("*2\r\n$1\r\n1\r\n$4\r\n2000\r\n", "ZRANGEBYSCORE", "active", "-inf", "+inf", "WITHSCORES"),
			evalOp("-EMQSTALE complete token mismatch\r\n", completeScript, []string{"job:1", "active"}, "1", "1"),
			evalOp("+OK\r\n", completeScript, []string{"job:1", "active"}, "2", "1"),
			cmd("$4\r\ndone\r\n", "HGET", "job:1", "state"),
			cmd(":0\r\n", "EXISTS", "active"), // the emptied zset is gone
			cmd("+OK\r\n", "SET", "job:2", "x"),
			evalOp(scriptErr("WRONGTYPE Operation against a key holding the wrong kind of value", claimScript, 1), claimScript, []string{"job:2", "active"}, "1", "2"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			s.SetTime(t0)
			runOps(t, s, tc.ops)
		})
	}
}

func TestConversions(t *testing.T) {
	tests := []struct{ body, want string }{
		{"return 3.99", ":3\r\n"},
		{"return -3.5", ":-3\r\n"},
		{"return 1e20", ":-9223372036854775808\r\n"}, // x86-64's cast of an out-of-range double
		{"return 0/0", ":-9223372036854775808\r\n"},
		{"return {1,2,nil,4}", "*2\r\n:1\r\n:2\r\n"},
		{"return {1, 2.9, -2.9}", "*3\r\n:1\r\n:2\r\n:-2\r\n"},
		{"return true", ":1\r\n"},
		{"return false", "$-1\r\n"},
		{"return nil", "$-1\r\n"},
		{"return 'str'", "$3\r\nstr\r\n"},
		{"return {ok='FINE'}", "+FINE\r\n"},
		{"return {err='MYERR x'}", "-MYERR x\r\n"},
		{"return {err='nocode'}", "-nocode\r\n"}, // a returned table is sent as is: no ERR added
		{"return redis.error_reply('nocode')", "-ERR nocode\r\n"},
		{"return redis.error_reply('EMQSTALE complete token mismatch')", "-EMQSTALE complete token mismatch\r\n"},
		{"return redis.status_reply('FINE')", "+FINE\r\n"},
		{"return {1, {2, {3, 'x'}}, {ok='s'}, {err='E e'}}", "*4\r\n:1\r\n*2\r\n:2\r\n*2\r\n:3\r\n$1\r\nx\r\n+s\r\n-E e\r\n"},
		{"return {foo='bar'}", "*0\r\n"},
		{"return redis.pcall('hget', 'str', 'f')", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"local r = redis.pcall('hget', 'str', 'f'); return r.err", "$65\r\nWRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"return redis.call('get', 'missing')", "$-1\r\n"},
		{"return type(redis.call('get', 'missing'))", "$7\r\nboolean\r\n"},
		{"return redis.call('set', 'x', 'y')", "+OK\r\n"},
		{"return redis.call('type', 'str').ok", "$6\r\nstring\r\n"},
		{"return {double=0.5}", "$3\r\n0.5\r\n"},
	}
	for _, tc := range tests {
		s := New()
		s.Do("SET", "str", "v")
		if got := string(s.Eval(tc.body, nil, nil)); got != tc.want {
			t.Errorf("%s:\n got  %q\n want %q", tc.body, got, tc.want)
		}
	}
}

func TestScriptErrors(t *testing.T) {
	tests := []struct{ body, want string }{
		{"return redis.call('incr', 'str')", scriptErr("ERR value is not an integer or out of range", "return redis.call('incr', 'str')", 1)},
		{"\n\nreturn redis.call('hget', 'str', 'f')", scriptErr("WRONGTYPE Operation against a key holding the wrong kind of value", "\n\nreturn redis.call('hget', 'str', 'f')", 3)},
		{"return redis.call('nosuch')", scriptErr("ERR Unknown command called from script", "return redis.call('nosuch')", 1)},
		{"return redis.call('get')", scriptErr("ERR Wrong number of args calling command from script", "return redis.call('get')", 1)},
		{"return redis.call('lpush', 'l', 'x')", scriptErr("ERR luaeval: command 'lpush' is not implemented", "return redis.call('lpush', 'l', 'x')", 1)},
		{"error('boom')", scriptErr("ERR user_script:1: boom", "error('boom')", 1)},
		{"error({err='X y'})", scriptErr("X y", "error({err='X y'})", 1)},
		{"return nope", scriptErr("ERR user_script:1: Script attempted to access nonexistent global variable 'nope'", "return nope", 1)},
		{"x = 1", scriptErr("ERR user_script:1: Attempt to modify a readonly table", "x = 1", 1)},
		// Valkey 8.0.1 crashes on this one; luaeval answers instead.
		{"error({})", scriptErr("ERR luaeval: script raised an error table without an 'err' string (Valkey 8.0.1 crashes on this)", "error({})", 1)},
	}
	for _, tc := range tests {
		s := New()
		s.Do("SET", "str", "v")
		if got := string(s.Eval(tc.body, nil, nil)); got != tc.want {
			t.Errorf("%q:\n got  %q\n want %q", tc.body, got, tc.want)
		}
	}
	s := New()
	if got, want := string(s.Do("LPUSH", "l", "x")), "-ERR luaeval: command 'lpush' is not implemented\r\n"; got != want {
		t.Errorf("LPUSH: got %q, want %q", got, want)
	}
	if got, want := string(s.Do("FROB", "x")), "-ERR unknown command 'FROB', with args beginning with: 'x' \r\n"; got != want {
		t.Errorf("FROB: got %q, want %q", got, want)
	}
}

func TestClock(t *testing.T) {
	s := New()
	// The default clock is the wall clock.
	s.Do("SET", "k", "v", "PX", "60000")
	if got := string(s.Do("PTTL", "k")); got < ":59000" || !strings.HasPrefix(got, ":") {
		t.Fatalf("PTTL on the wall clock: %q", got)
	}
	s.SetTime(t0)
	s.Do("SET", "k", "v", "EX", "10")
	s.Advance(9500 * time.Millisecond)
	if got := string(s.Do("TTL", "k")); got != ":1\r\n" { // 500 ms rounds up
		t.Errorf("TTL: %q", got)
	}
	// TIME and a script's view of time follow the fake clock too.
	want := fmt.Sprintf("*2\r\n$10\r\n%d\r\n$6\r\n500000\r\n", t0.Unix()+9)
	if got := string(s.Do("TIME")); got != want {
		t.Errorf("TIME: got %q, want %q", got, want)
	}
	if got := string(s.Eval("return redis.call('PTTL', KEYS[1])", []string{"k"}, nil)); got != ":500\r\n" {
		t.Errorf("PTTL in a script: %q", got)
	}
	s.Advance(501 * time.Millisecond)
	if got := s.Keys(); len(got) != 0 {
		t.Errorf("Keys after expiry: %q", got)
	}
	// A custom clock works as well.
	now := t0
	s.Now = func() time.Time { return now }
	s.Do("SET", "k", "v", "PX", "10")
	now = now.Add(11 * time.Millisecond)
	if got := string(s.Do("GET", "k")); got != "$-1\r\n" {
		t.Errorf("GET after custom clock moved: %q", got)
	}
}

func TestEvalShaAndCache(t *testing.T) {
	s := New()
	sha := SHA1Hex(releaseScript)
	if got := string(s.Do("EVALSHA", sha, "1", "lock", "abc")); got != "-NOSCRIPT No matching script.\r\n" {
		t.Fatalf("EVALSHA before load: %q", got)
	}
	if got := string(s.Do("SCRIPT", "LOAD", releaseScript)); got != "$40\r\n"+sha+"\r\n" {
		t.Fatalf("SCRIPT LOAD: %q", got)
	}
	s.Do("SET", "lock", "abc")
	if got := string(s.Do("EVALSHA", sha, "1", "lock", "abc")); got != ":1\r\n" {
		t.Fatalf("EVALSHA: %q", got)
	}
	if got := string(s.Do()); got != "" {
		t.Fatalf("empty command: %q", got)
	}
}

func TestConcurrentScriptsAreAtomic(t *testing.T) {
	s := New()
	const body = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('SET', KEYS[1], v + 1)
return v + 1`
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				s.Eval(body, []string{"n"}, nil)
			}
		}()
	}
	wg.Wait()
	if got := string(s.Do("GET", "n")); got != "$3\r\n400\r\n" {
		t.Fatalf("read-modify-write from 8 goroutines: %q, want 400", got)
	}
}

func TestScriptTimeout(t *testing.T) {
	s := New()
	s.ScriptTimeout = 50 * time.Millisecond
	start := time.Now()
	got := string(s.Eval("while true do end", nil, nil))
	if !strings.HasPrefix(got, "-ERR luaeval: script exceeded ScriptTimeout") {
		t.Fatalf("infinite loop: %q", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	// pcall cannot swallow the timeout.
	got = string(s.Eval("while true do pcall(function() while true do end end) end", nil, nil))
	if !strings.HasPrefix(got, "-ERR luaeval: script exceeded ScriptTimeout") {
		t.Fatalf("pcall loop: %q", got)
	}
}

func TestRESP3(t *testing.T) {
	s := New()
	s.Do("HSET", "h", "a", "1")
	if got := string(s.EvalProto("return nil", nil, nil, 3)); got != "_\r\n" {
		t.Errorf("nil over RESP3: %q", got)
	}
	if got := string(s.DoProto(3, "HGETALL", "h")); got != "%1\r\n$1\r\na\r\n$1\r\n1\r\n" {
		t.Errorf("HGETALL over RESP3: %q", got)
	}
	if got := string(s.EvalProto("redis.setresp(3); return redis.call('hgetall', 'h')", nil, nil, 2)); got != "*2\r\n$1\r\na\r\n$1\r\n1\r\n" {
		t.Errorf("RESP3 map to a RESP2 client: %q", got)
	}
}

func TestRunawayScripts(t *testing.T) {
	s := New()
	// The depth limit must be what stops it, however slow the machine:
	// a loaded one took more than the default 5 s to recurse 20000 deep.
	s.ScriptTimeout = 10 * time.Minute
	if got := string(s.Eval("local function f() return 1 + f() end return f()", nil, nil)); got != "-ERR luaeval: stack overflow (Lua call depth above 20000)\r\n" {
		t.Errorf("unbounded recursion: %q", got)
	}
	if got := string(s.Eval("local function f(n) if n == 0 then return 0 end return 1 + f(n-1) end return f(5000)", nil, nil)); got != ":5000\r\n" {
		t.Errorf("deep recursion: %q", got)
	}
	got := string(s.Eval("local t = {} t[1] = t return t", nil, nil))
	if !strings.HasSuffix(got, "-ERR reached lua stack limit\r\n") || strings.Count(got, "*1\r\n") != maxReplyDepth+1 {
		t.Errorf("self-referencing table: %.80q...", got)
	}
}
