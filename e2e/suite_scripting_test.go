package e2e_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// What Valkey's own test suite (unit/scripting, unit/introspection) found
// different through lockproxy's script monitor, each compared with the
// same command sent to a valkey-server directly (docs/valkey-suite.md).

// scriptPair is a proxy with a lock rule in front of one server, and
// another server of the same kind for the direct answers.
func scriptPair(t *testing.T) (e *env, direct, proxied *raw) {
	t.Helper()
	e = newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	bare := valkeytest.Start(t)
	return e, dialRaw(t, bare.Addr), dialRaw(t, e.addr)
}

// suiteSHA is a script's SHA1, as Valkey names it.
func suiteSHA(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// sameReply sends one command both ways and wants the same bytes, after
// the script's SHA1 in an error (which the tests compute from the text).
func sameReply(t *testing.T, direct, proxied *raw, args ...string) string {
	t.Helper()
	want, got := direct.do(args...), proxied.do(args...)
	if got != want {
		t.Errorf("%q:\n through lockproxy %q\n directly          %q", args, got, want)
	}
	return want
}

// The suite's "Try trick global protection 1" and "Try trick readonly
// table on valkey table": writing to redis (its call, pcall or any field)
// and setmetatable of redis or _G fail with Valkey's words, from the
// body's line. redis.call and redis.pcall were fields of the monitor's own
// redis table, so assigning them succeeded; setmetatable raised "cannot
// change a protected metatable".
func TestSuiteScriptReadonlyTables(t *testing.T) {
	e, direct, proxied := scriptPair(t)
	readonly := []string{
		"redis.call = function() return 1 end",
		"\nredis.pcall = function() return 1 end",
		"redis.foo = 1",
		"\n\nsetmetatable(_G, {})",
		"setmetatable(redis, {})",
	}
	bodies := []string{
		"local t = setmetatable({}, {__index = function() return 7 end}) return t.x",
		"return setmetatable(1, {})",
		"return pcall(setmetatable, {}, 1)",
	}
	if e.luaHas("server") {
		readonly = append(readonly, "server.call = function() return 1 end", "setmetatable(server, {})")
	}
	for _, b := range readonly {
		mustContain(t, sameReply(t, direct, proxied, "EVAL", b, "0"), "Attempt to modify a readonly table")
	}
	for _, b := range bodies {
		sameReply(t, direct, proxied, "EVAL", b, "0")
	}
	// A function: the same words (the line a write to redis is refused
	// from is the monitor's, in a library).
	for i, b := range readonly {
		lib := "#!lua name=ro" + string(rune('a'+i)) + "\nredis.register_function('ro" + string(rune('a'+i)) + "', function() " + b + " end)"
		sameReply(t, direct, proxied, "FUNCTION", "LOAD", lib)
		mustContain(t, proxied.do("FCALL", "ro"+string(rune('a'+i)), "0"), "Attempt to modify a readonly table")
	}
}

// The suite's "EVALSHA_RO - Can we call a SHA1 if already defined?": a
// script that ran under the monitor (sent with EVAL) is held by Valkey as
// the monitored text, under another SHA1, and EVALSHA_RO of the client's
// SHA1 got NOSCRIPT. Now it answers as Valkey does, a write refused too.
func TestSuiteEvalshaROOfMonitoredScript(t *testing.T) {
	_, direct, proxied := scriptPair(t)
	get := "return redis.call('get',KEYS[1])"
	set := "return redis.call('set',KEYS[1],'x')"
	for _, c := range []*raw{direct, proxied} {
		eq(t, c.do("SET", "mykey", "myval"), "+OK\r\n")
	}
	sameReply(t, direct, proxied, "EVAL", get, "1", "mykey")
	sameReply(t, direct, proxied, "EVAL", set, "1", "other")
	eq(t, sameReply(t, direct, proxied, "EVALSHA_RO", suiteSHA(get), "1", "mykey"), bulk("myval"))
	sameReply(t, direct, proxied, "evalsha_ro", strings.ToUpper(suiteSHA(get)), "1", "mykey")
	mustContain(t, sameReply(t, direct, proxied, "EVALSHA_RO", suiteSHA(set), "1", "mykey"), "-ERR Write commands are not allowed from read-only scripts")
	mustContain(t, sameReply(t, direct, proxied, "EVALSHA_RO", suiteSHA("return 42"), "0"), "-NOSCRIPT")
}

// The suite's "SCRIPTING FLUSH - is able to clear the scripts cache?" and
// "SCRIPTING FLUSH ASYNC": after SCRIPT FLUSH (any form, in MULTI too) an
// EVALSHA of a script lockproxy ran under its monitor is NOSCRIPT, as on
// Valkey; lockproxy kept the body and ran it.
func TestSuiteScriptFlushForgets(t *testing.T) {
	_, direct, proxied := scriptPair(t)
	body := "return redis.call('get',KEYS[1])"
	for _, c := range []*raw{direct, proxied} {
		eq(t, c.do("SET", "mykey", "myval"), "+OK\r\n")
	}
	for _, flush := range [][]string{{"SCRIPT", "FLUSH"}, {"script", "flush", "async"}, {"SCRIPT", "FLUSH", "SYNC"}, nil} {
		for _, load := range [][]string{{"SCRIPT", "LOAD", body}, {"EVAL", body, "1", "mykey"}} {
			sameReply(t, direct, proxied, load...)
			eq(t, sameReply(t, direct, proxied, "EVALSHA", suiteSHA(body), "1", "mykey"), bulk("myval"))
			if flush == nil {
				// In a transaction: learned at EXEC.
				for _, c := range []*raw{direct, proxied} {
					eq(t, c.do("MULTI"), "+OK\r\n")
					eq(t, c.do("SCRIPT", "FLUSH"), "+QUEUED\r\n")
					eq(t, c.do("EXEC"), "*1\r\n+OK\r\n")
				}
			} else {
				sameReply(t, direct, proxied, flush...)
			}
			for _, c := range []*raw{direct, proxied} {
				mustContain(t, c.do("EVALSHA", suiteSHA(body), "1", "mykey"), "-NOSCRIPT ")
			}
		}
	}
}

// The suite's "MONITOR can log commands issued by the scripting engine":
// MONITOR showed a monitored script as "EVAL" where the client sent
// "eval". The command keeps the client's letter case (the text and its
// arguments are the monitor's, and once Valkey holds the monitored text an
// EVAL goes as EVALSHA of it: "evalsha" for a client's "eval").
func TestSuiteMonitorKeepsScriptVerb(t *testing.T) {
	e, direct, proxied := scriptPair(t)
	for _, verb := range []string{"eval", "EVAL", "eval"} {
		for i, c := range []*raw{direct, proxied} {
			addr := c.nc.RemoteAddr().String()
			if i == 1 {
				addr = e.addr
			}
			m := dialRaw(t, addr)
			eq(t, m.do("MONITOR"), "+OK\r\n")
			eq(t, c.do(verb, "redis.call('set',KEYS[1],ARGV[1])", "1", "foo", "bar"), "$-1\r\n")
			mustContain(t, m.read(), "] \""+verb)
			mustContain(t, m.read(), " lua] \"set\" \"foo\" \"bar\"")
		}
	}
	// EVALSHA, once the monitored text is loaded (its first run loads it
	// by EVAL).
	sha := suiteSHA("return redis.call('get',KEYS[1])")
	eq(t, proxied.do("EVAL", "return redis.call('get',KEYS[1])", "1", "foo"), bulk("bar"))
	m := dialRaw(t, e.addr)
	eq(t, m.do("MONITOR"), "+OK\r\n")
	eq(t, proxied.do("evalsha", sha, "1", "foo"), bulk("bar"))
	mustContain(t, m.read(), "] \"evalsha\" ")
}

// The suite's "FUNCTION - function stats" (and its three variants):
// Valkey counts each function of a library loaded through lockproxy twice
// (its own name and name__lockproxy), and FUNCTION STATS showed that
// count. It shows the client's functions, in RESP2 and RESP3, and with
// a library loaded around lockproxy beside them.
func TestSuiteFunctionStatsCount(t *testing.T) {
	e, direct, proxied := scriptPair(t)
	libs := []string{
		"#!lua name=lib1\nredis.register_function('f1', function() return 1 end)\nredis.register_function{function_name='f2', callback=function() return 2 end, flags={'no-writes'}}",
		"#!lua name=lib2\nredis.register_function('g1', function() return 3 end)",
	}
	for _, l := range libs {
		sameReply(t, direct, proxied, "FUNCTION", "LOAD", l)
	}
	for _, proto := range []string{"2", "3", "2"} {
		direct.do("HELLO", proto)
		proxied.do("HELLO", proto)
		sameReply(t, direct, proxied, "FUNCTION", "STATS")
		sameReply(t, direct, proxied, "function", "stats")
	}
	// One loaded around lockproxy, on the proxy's server: counted once.
	d := dialRaw(t, e.srv.Addr)
	eq(t, d.do("FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function('h1', function() return 4 end)"), bulk("lib3"))
	eq(t, direct.do("FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function('h1', function() return 4 end)"), bulk("lib3"))
	sameReply(t, direct, proxied, "FUNCTION", "STATS")
	sameReply(t, direct, proxied, "FUNCTION", "DELETE", "lib1")
	sameReply(t, direct, proxied, "FUNCTION", "STATS")
	// What the client sent next is answered in its order.
	sameReply(t, direct, proxied, "PING")
}

// The suite's "Different clients can redirect to the same connection"
// (unit/tracking, once in a while): each client that redirected its
// invalidations had a relay connection of its own, and the target got them
// in the order the relays' readers happened to run, not Valkey's. Clients
// redirecting to one target now share its relay.
func TestSuiteTrackingRedirectOrder(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	target := dialRaw(t, e.addr)
	id := strings.TrimSuffix(strings.TrimPrefix(target.do("CLIENT", "ID"), ":"), "\r\n")
	mustContain(t, target.do("SUBSCRIBE", "__redis__:invalidate"), "subscribe")
	a, b, w := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("CLIENT", "TRACKING", "on", "REDIRECT", id), "+OK\r\n")
	eq(t, b.do("CLIENT", "TRACKING", "on", "REDIRECT", id), "+OK\r\n")
	for i := 0; i < 30; i++ {
		k1, k2 := fmt.Sprintf("key1{t}%d", i), fmt.Sprintf("key2{t}%d", i)
		eq(t, w.do("MSET", k1, "1", k2, "1"), "+OK\r\n")
		eq(t, a.do("GET", k1), bulk("1"))
		eq(t, b.do("GET", k2), bulk("1"))
		w.send(string(redisCmd("INCR", k1)) + string(redisCmd("INCR", k2)))
		eq(t, w.read(), ":2\r\n")
		eq(t, w.read(), ":2\r\n")
		mustContain(t, target.read(), k1)
		mustContain(t, target.read(), k2)
	}
	// One client's tracking off leaves the other's redirect working.
	eq(t, a.do("CLIENT", "TRACKING", "off"), "+OK\r\n")
	eq(t, b.do("GET", "key3"), "$-1\r\n")
	eq(t, w.do("SET", "key3", "1"), "+OK\r\n")
	mustContain(t, target.read(), "key3")
}

// SCRIPT EXISTS of a script that ran under the monitor (Valkey holds only
// the monitored text) answers 1, as directly, and 0 after SCRIPT FLUSH.
func TestSuiteScriptExistsOfMonitoredScript(t *testing.T) {
	_, direct, proxied := scriptPair(t)
	body := "return redis.call('get',KEYS[1])"
	sameReply(t, direct, proxied, "EVAL", body, "1", "k")
	sameReply(t, direct, proxied, "EVAL", "return 1", "0")
	eq(t, sameReply(t, direct, proxied, "SCRIPT", "EXISTS", suiteSHA(body), suiteSHA("return 1"), suiteSHA("return 2"), strings.ToUpper(suiteSHA(body))), "*4\r\n:1\r\n:1\r\n:0\r\n:1\r\n")
	sameReply(t, direct, proxied, "SCRIPT", "FLUSH")
	eq(t, sameReply(t, direct, proxied, "script", "exists", suiteSHA(body)), "*1\r\n:0\r\n")
}
