package e2e_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
)

// Issue 26 item 4: FUNCTION LOAD through lockproxy puts its monitor inside
// the library, so every function of it is checked when it runs, by
// whichever lockproxy instance or client calls it.

// monitorLib is a library of lock functions as an application writes
// them: a token-checked release and renewal, an acquisition, a blind
// delete, a write of a key given by name, a read.
const monitorLib = `#!lua name=locks
local function release(keys, args)
  if redis.call('GET', keys[1]) == args[1] then
    return redis.call('DEL', keys[1])
  end
  return 0
end
redis.register_function('release', release)
redis.register_function{function_name = 'renew', callback = function(keys, args)
  if redis.call('GET', keys[1]) == args[1] then
    return redis.call('PEXPIRE', keys[1], args[2])
  end
  return 0
end}
redis.register_function('acquire', function(keys, args)
  return redis.call('SET', keys[1], args[1], 'NX', 'PX', 60000)
end)
redis.register_function('acquire_and_write', function(keys, args)
  redis.call('SET', keys[1], args[1], 'NX', 'PX', 60000)
  return redis.call('SET', keys[2], args[2])
end)
redis.register_function('blind_del', function(keys) return redis.call('DEL', keys[1]) end)
redis.register_function('del_named', function(keys, args) return redis.call('DEL', args[1]) end)
redis.register_function('nargs', function(keys, args) return {#keys, #args, args[#args]} end)
redis.register_function{function_name = 'get', callback = function(keys) return redis.call('GET', keys[1]) end, flags = {'no-writes'}}
redis.register_function('fail', function(keys)
  return redis.call('NOSUCHCOMMAND', keys[1])
end)
`

func TestMonitorFunctions(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := e.direct()
	v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, v.do("FUNCTION", "LOAD", monitorLib), bulk("locks"))
	eq(t, v.do("FUNCTION", "LOAD", "REPLACE", monitorLib), bulk("locks"))
	fresh := func(t *testing.T) {
		t.Helper()
		d.Del(ctx, "v:lock", "{r}:flock", "{r}:data", "a:lock")
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
	}
	t.Run("a stranger's blind delete is refused and the lock stays", func(t *testing.T) {
		fresh(t)
		mustContain(t, s.do("FCALL", "blind_del", "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		mustContain(t, s.do("FCALL", "release", "1", "v:lock", "wrong"), ":0")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		mustContain(t, s.do("FCALL", "del_named", "0", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\"")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		mustContain(t, s.do("DEL", "v:lock"), "-NOTOWNER")
	})
	t.Run("the holder's token-checked release and renewal work from any connection", func(t *testing.T) {
		fresh(t)
		eq(t, s.do("FCALL", "renew", "1", "v:lock", "vtok", "900000"), ":1\r\n")
		if ttl := d.PTTL(ctx, "v:lock").Val(); ttl.Milliseconds() <= 600000 {
			t.Fatalf("PTTL %v after the renewal", ttl)
		}
		eq(t, s.do("FCALL", "release", "1", "v:lock", "vtok"), ":1\r\n")
		eq(t, d.Exists(ctx, "v:lock").Val(), int64(0))
		// The holder's own blind delete of its own lock.
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, v.do("FCALL", "blind_del", "1", "v:lock"), ":1\r\n")
	})
	t.Run("an acquisition inside a function gets a grant", func(t *testing.T) {
		fresh(t)
		eq(t, s.do("FCALL", "acquire", "1", "a:lock", "atok"), "+OK\r\n")
		eq(t, s.do("LOCKPROXY", "FENCE", "a:lock"), ":1\r\n")
		eq(t, s.do("DEL", "a:lock"), ":1\r\n")
		// Taken and the guarded key written in one call: the grant is
		// minted before the write's fence check.
		eq(t, s.do("FCALL", "acquire_and_write", "2", "{r}:flock", "{r}:data", "tok", "mine"), "+OK\r\n")
		eq(t, d.Get(ctx, "{r}:data").Val(), "mine")
		eq(t, d.Get(ctx, "{r}:fence").Val(), "1")
		// A stranger's write of the guarded key, inside a function.
		mustContain(t, v.do("FCALL", "acquire_and_write", "2", "{r}:flock", "{r}:data", "tok2", "bad"), "-UNFENCED")
		eq(t, d.Get(ctx, "{r}:data").Val(), "mine")
	})
	t.Run("the function sees the client's arguments only", func(t *testing.T) {
		eq(t, s.do("FCALL", "nargs", "1", "x", "a", "b"), "*3\r\n:1\r\n:2\r\n$1\r\nb\r\n")
		eq(t, s.do("FCALL", "nargs", "0"), "*2\r\n:0\r\n:0\r\n")
	})
	t.Run("errors name the function as Valkey does", func(t *testing.T) {
		got := s.do("FCALL", "fail", "1", "x")
		mustContain(t, got, "script: fail, on @user_function:")
		if strings.Contains(got, "__lockproxy") {
			t.Fatalf("got %q", got)
		}
		fresh(t)
		eq(t, s.do("FCALL_RO", "get", "1", "v:lock"), bulk("vtok"))
	})
	t.Run("a direct FCALL may write no lock", func(t *testing.T) {
		fresh(t)
		dc := dialRaw(t, e.srv.Addr)
		mustContain(t, dc.do("FCALL", "release", "1", "v:lock", "vtok"), "-LOCKED lockproxy refused DEL of \"v:lock\" inside a script: it is a lock's key, and this function was called without lockproxy")
		mustContain(t, dc.do("FCALL", "blind_del__lockproxy", "1", "v:lock"), "-LOCKED")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		eq(t, dc.do("FCALL", "nargs", "1", "x", "y"), "*3\r\n:1\r\n:1\r\n$1\r\ny\r\n")
		mustContain(t, s.do("FCALL", "blind_del__lockproxy", "1", "v:lock"), "-ERR lockproxy refused FCALL")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	})
	t.Run("state kept in the library across calls", func(t *testing.T) {
		// A library's upvalues outlive a call: a coroutine primed by the
		// holder's call, resumed by a stranger's, and a token the
		// holder's call passed, used by a stranger's, are checked with
		// the call that runs them.
		lib := `#!lua name=state
local co, saved
redis.register_function('prime', function(keys, args)
  co = coroutine.create(function() coroutine.yield() return redis.call('DEL', keys[1]) end)
  coroutine.resume(co)
  saved = args[1]
  return 1
end)
redis.register_function('fire', function()
  local ok, r = coroutine.resume(co)
  if not ok then return type(r) == 'table' and r or redis.error_reply(tostring(r)) end
  return r
end)
redis.register_function('use', function(keys)
  if redis.call('GET', keys[1]) == saved then return redis.call('DEL', keys[1]) end
  return 0
end)`
		eq(t, s.do("FUNCTION", "LOAD", "REPLACE", lib), bulk("state"))
		fresh(t)
		eq(t, v.do("FCALL", "prime", "1", "v:lock", "vtok"), ":1\r\n")
		mustContain(t, s.do("FCALL", "fire", "0"), "-LOCKED lockproxy refused DEL of \"v:lock\"")
		mustContain(t, s.do("FCALL", "use", "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\"")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	})
	t.Run("in a transaction", func(t *testing.T) {
		fresh(t)
		m := dialRaw(t, e.addr)
		lib := strings.Replace(monitorLib, "name=locks", "name=locks2", 1)
		lib = strings.ReplaceAll(lib, "register_function('", "register_function('m_")
		lib = strings.ReplaceAll(lib, "function_name = '", "function_name = 'm_")
		eq(t, m.do("MULTI"), "+OK\r\n")
		eq(t, m.do("FUNCTION", "LOAD", lib), "+QUEUED\r\n")
		eq(t, m.do("FCALL", "m_blind_del", "1", "v:lock"), "+QUEUED\r\n")
		eq(t, m.do("FCALL", "m_release", "1", "v:lock", "vtok"), "+QUEUED\r\n")
		got := m.do("EXEC")
		mustContain(t, got, "$6\r\nlocks2\r\n-NOTOWNER lockproxy refused DEL")
		mustContain(t, got, ":1\r\n")
		eq(t, d.Exists(ctx, "v:lock").Val(), int64(0))
	})
	t.Run("a library loaded around lockproxy is not run", func(t *testing.T) {
		fresh(t)
		lib := "#!lua name=around\nredis.register_function('del_around', function(keys) return redis.call('DEL', keys[1]) end)"
		eq(t, dialRaw(t, e.srv.Addr).do("FUNCTION", "LOAD", lib), bulk("around"))
		mustContain(t, s.do("FCALL", "del_around", "1", "v:lock"), "-ERR Function not found, or its library was loaded around lockproxy")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		eq(t, s.do("FUNCTION", "LOAD", "REPLACE", lib), bulk("around"))
		mustContain(t, s.do("FCALL", "del_around", "1", "v:lock"), "-NOTOWNER")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	})
}

// Issue 26 finding 6: a library replaced around lockproxy (FUNCTION LOAD
// REPLACE sent to Valkey directly, or by another instance) with a
// function that deletes its key kept, in this instance, the verdict of
// the version it saw, and ran unchecked. Now a function runs through
// lockproxy only under the monitor inside its library.
func TestMonitorFunctionReplacedAround(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	c, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	guarded := "#!lua name=six\nredis.register_function('rel6', function(keys, args)\n  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end\n  return 0\nend)"
	blind := "#!lua name=six\nredis.register_function('rel6', function(keys, args) return redis.call('DEL', keys[1]) end)"
	eq(t, c.do("FUNCTION", "LOAD", guarded), bulk("six"))
	eq(t, c.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, d.FunctionLoadReplace(ctx, blind).Val(), "six")
	mustContain(t, stranger.do("FCALL", "rel6", "1", "v:lock", "wrong"), "-ERR Function not found, or its library was loaded around lockproxy")
	eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	// Replaced through lockproxy (any instance), the blind version runs
	// checked.
	eq(t, stranger.do("FUNCTION", "LOAD", "REPLACE", blind), bulk("six"))
	mustContain(t, stranger.do("FCALL", "rel6", "1", "v:lock", "wrong"), "-NOTOWNER")
	eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
}

// FUNCTION LIST through lockproxy shows a library as the client loaded
// it: its functions (not their monitored registrations) and, WITHCODE,
// its own code; in RESP2 and RESP3, byte for byte as Valkey shows the
// library loaded straight into it, but for the order of the functions
// (Valkey's hash table's, which the extra registrations change).
func TestMonitorFunctionListTransparent(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	other := valkeytest.Start(t).Addr
	for _, proto := range []string{"2", "3"} {
		via, direct := dialRaw(t, e.addr), dialRaw(t, other)
		via.do("HELLO", proto)
		direct.do("HELLO", proto)
		eq(t, via.do("FUNCTION", "LOAD", "REPLACE", monitorLib), bulk("locks"))
		eq(t, direct.do("FUNCTION", "LOAD", "REPLACE", monitorLib), bulk("locks"))
		for _, args := range [][]string{
			{"FUNCTION", "LIST"},
			{"FUNCTION", "LIST", "WITHCODE"},
			{"function", "list", "libraryname", "lo*", "withcode"},
		} {
			if got, want := sortedFunctions(t, via.do(args...)), sortedFunctions(t, direct.do(args...)); got != want {
				t.Errorf("RESP%s %q: through lockproxy %q, direct %q", proto, args, got, want)
			}
		}
	}
}

// sortedFunctions is a FUNCTION LIST reply with each library's functions
// in name order.
func sortedFunctions(t *testing.T, reply string) string {
	t.Helper()
	v, _, err := resp.Parse([]byte(reply))
	if err != nil || v.Type != '*' {
		t.Fatalf("FUNCTION LIST: %q", reply)
	}
	name := func(f resp.Value) string {
		for j := 0; j+1 < len(f.Elems); j += 2 {
			if string(f.Elems[j].Str) == "name" {
				return string(f.Elems[j+1].Str)
			}
		}
		return ""
	}
	for i := range v.Elems {
		lib := v.Elems[i]
		for j := 0; j+1 < len(lib.Elems); j += 2 {
			if string(lib.Elems[j].Str) == "functions" {
				fs := lib.Elems[j+1].Elems
				sort.Slice(fs, func(a, b int) bool { return name(fs[a]) < name(fs[b]) })
			}
		}
	}
	return string(resp.AppendValue(nil, v))
}

// In front of a cluster FUNCTION LOAD reaches every primary with the
// monitor inside, and FCALL is checked on each slot's node.
func TestMonitorFunctionsCluster(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	m := slotMap(t, cl)
	h, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, h.do("FUNCTION", "LOAD", "REPLACE", monitorLib), bulk("locks"))
	for i := 0; i < 6; i++ {
		k := fmt.Sprintf("fmon%d:lock", i)
		tok := "tok" + fmt.Sprint(i)
		eq(t, h.do("FCALL", "acquire", "1", k, tok), "+OK\r\n")
		mustContain(t, s.do("FCALL", "blind_del", "1", k), "-NOTOWNER lockproxy refused DEL")
		eq(t, directTo(t, m, k, "GET", k), bulk(tok))
		eq(t, s.do("FCALL", "release", "1", k, tok), ":1\r\n")
		eq(t, directTo(t, m, k, "EXISTS", k), ":0\r\n")
	}
}

// FUNCTION STATS through lockproxy names a running function as the client
// called it: its own name, and the command as sent (lockproxy's extra
// arguments left out), then FUNCTION KILL ends it, as Valkey's suite
// expects.
func TestMonitorFunctionStats(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	runner, other := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, runner.do("FUNCTION", "LOAD", "REPLACE", "#!lua name=spin\nredis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)"), bulk("spin"))
	runner.send(string(redisCmd("fcall", "spin", "1", "v:lock", "x")))
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := other.do("FUNCTION", "STATS")
		if strings.HasPrefix(got, "*4\r\n$14\r\nrunning_script\r\n*6\r\n") {
			mustContain(t, got, "$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*5\r\n$5\r\nfcall\r\n$4\r\nspin\r\n$1\r\n1\r\n$6\r\nv:lock\r\n$1\r\nx\r\n$11\r\nduration_ms\r\n")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("FUNCTION STATS: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		got := other.do("FUNCTION", "KILL")
		if got == "+OK\r\n" {
			break
		}
		if !strings.HasPrefix(got, "-NOTBUSY") || time.Now().After(deadline) {
			t.Fatalf("FUNCTION KILL: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mustContain(t, runner.read(), "-ERR Script killed by user with ")
}

// What FUNCTION LOAD answers through lockproxy, as straight from Valkey:
// a library that calls what Valkey offers only at run time while it
// loads, register_function with no or too many arguments, a name that
// another library has (the error names the function, not its monitored
// registration).
func TestMonitorFunctionLoadErrorsTransparent(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	via, direct := dialRaw(t, e.addr), dialRaw(t, valkeytest.Start(t).Addr)
	for _, args := range [][]string{
		{"FUNCTION", "LOAD", "#!lua name=a\nredis.register_function('fa', function() return 1 end)"},
		{"FUNCTION", "LOAD", "#!lua name=b\nredis.register_function('fa', function() return 2 end)"},
		{"FUNCTION", "LOAD", "#!lua name=c"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.call('PING')"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.setresp(3)"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function()"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function('fc', function() return 1 end, 'extra')"},
		// Named arguments in any letter case, as Valkey reads them; without
		// a name or a callback in any; a key Valkey does not know.
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function{FUNCTION_NAME = 'fc', CallBack = function() return 3 end, Flags = {'no-writes'}, DESCRIPTION = 'd'}"},
		{"FCALL_RO", "fc", "0"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "c"},
		{"FUNCTION", "DELETE", "c"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function{Function_Name = 'fc'}"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function{CALLBACK = function() return 1 end}"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function{callback = function() return 1 end, function_name = 'fc', flags = {'bogus'}}"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function{function_name = 'fc', callback = function() return 1 end, bad = 1}"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function{function_name = 'fc', CALLBACK = function() return 1 end, bad = 1}"},
		{"FUNCTION", "LOAD", "#!lua name=c\nredis.register_function('f c', function() return 1 end)"},
		{"FCALL", "fa", "0"},
	} {
		// A run-time call at load time is refused from the monitor's
		// line, not the library's (docs/scripts.md).
		line := regexp.MustCompile(`user_function:[0-9]+:`)
		got, want := line.ReplaceAllString(via.do(args...), "user_function:N:"), line.ReplaceAllString(direct.do(args...), "user_function:N:")
		if got != want {
			t.Errorf("%q: through lockproxy %q, direct %q", args, got, want)
		}
	}
}

// FUNCTION RESTORE through lockproxy loads every library of the payload
// with the monitor inside, wherever the payload was made: here on another
// server, from a library long enough for Valkey to compress its code
// (LZF). A stranger's FCALL through lockproxy is then checked, and a
// direct one may delete no lock. A library that registers its own
// evil__lockproxy is refused, as its FUNCTION LOAD through lockproxy is.
// The policies, a bad payload and a payload FUNCTION DUMP made through
// lockproxy behave as on Valkey.
func TestMonitorFunctionRestoreMonitored(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	dc := dialRaw(t, e.srv.Addr)
	holder, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
	other := dialRaw(t, valkeytest.Start(t).Addr)
	dump := func(code string) string {
		other.do("FUNCTION", "FLUSH")
		eq(t, other.do("FUNCTION", "LOAD", code), bulk("rlib"))
		p, _, err := resp.Parse([]byte(other.do("FUNCTION", "DUMP")))
		if err != nil || len(p.Str) == 0 {
			t.Fatalf("FUNCTION DUMP: %v %+v", err, p)
		}
		if strings.Contains(string(p.Str), "compresses well\n-- padding") {
			t.Fatal("the library's code is not compressed in the payload: the LZF path goes untested")
		}
		return string(p.Str)
	}
	const head = "#!lua name=rlib\n"
	pad := strings.Repeat("-- padding that compresses well\n", 40)
	const del = "(function(keys) return redis.call('DEL', keys[1]) end)\n"
	twin := dump(head + pad + "redis.register_function('evil', function(keys) return 1 end)\nredis.register_function('evil__lockproxy'," + del[1:])
	mustContain(t, stranger.do("FUNCTION", "RESTORE", twin), "-ERR Error registering functions")
	eq(t, dc.do("FUNCTION", "LIST", "LIBRARYNAME", "rlib"), "*0\r\n")
	payload := dump(head + pad + "redis.register_function('evil'," + del[1:])
	eq(t, stranger.do("FUNCTION", "RESTORE", payload), "+OK\r\n")
	mustContain(t, stranger.do("FCALL", "evil", "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
	mustContain(t, dc.do("FCALL", "evil", "1", "v:lock"), "-LOCKED lockproxy refused DEL of \"v:lock\" inside a script")
	eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	// The policies, as on Valkey.
	eq(t, stranger.do("FUNCTION", "RESTORE", payload), other.do("FUNCTION", "RESTORE", payload))
	eq(t, stranger.do("FUNCTION", "RESTORE", payload, "REPLACE"), "+OK\r\n")
	eq(t, stranger.do("FUNCTION", "RESTORE", payload, "bogus"), other.do("FUNCTION", "RESTORE", payload, "bogus"))
	eq(t, stranger.do("FUNCTION", "RESTORE", "bad_payload"), other.do("FUNCTION", "RESTORE", "bad_payload"))
	bad := []byte(payload)
	bad[len(bad)-1] ^= 1
	eq(t, stranger.do("FUNCTION", "RESTORE", string(bad), "REPLACE"), other.do("FUNCTION", "RESTORE", string(bad), "REPLACE"))
	mustContain(t, stranger.do("FCALL", "evil", "1", "v:lock"), "-NOTOWNER")
	// A payload made through lockproxy comes back as it was.
	mine, _, err := resp.Parse([]byte(holder.do("FUNCTION", "DUMP")))
	if err != nil {
		t.Fatal(err)
	}
	eq(t, holder.do("FUNCTION", "RESTORE", string(mine.Str), "FLUSH"), "+OK\r\n")
	mustContain(t, stranger.do("FCALL", "evil", "1", "v:lock"), "-NOTOWNER")
	eq(t, holder.do("FCALL", "evil", "1", "v:lock"), ":1\r\n")
	eq(t, d.Exists(ctx, "v:lock").Val(), int64(0))
}
