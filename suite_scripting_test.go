package lockproxy_test

import (
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// What Valkey's own test suite (unit/scripting, unit/introspection) found
// different through lockproxy's script monitor, each compared with the
// same command sent to a valkey-server directly (docs/valkey-suite.md).

// scriptPair is a proxy with a lock rule in front of one server, and
// another server of the same kind for the direct answers.
func scriptPair(t *testing.T) (e *env, direct, proxied *raw) {
	t.Helper()
	e = rulesEnv(t, "locks:\n  - pattern: \"*:lock\"\n")
	bare := valkeytest.Start(t)
	return e, dialRaw(t, bare.Addr), dialRaw(t, e.addr)
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
