package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/resp"
)

// A library's monitor (rewrite/monitor_lib.lua) and a script's share one
// source for the sealed stand-ins of getfenv, setfenv, loadstring and
// load: inside a function of a library loaded through lockproxy, every
// way to the real redis they offer is checked, and while the library
// loads they raise Valkey's own error.

// standInLib reaches redis through each stand-in.
const standInLib = `#!lua name=standins
redis.register_function('via_g', function(keys) return _G.redis.call('DEL', keys[1]) end)
redis.register_function('via_loadstring', function(keys)
  return loadstring("return redis.call('DEL', ...)")(keys[1])
end)
redis.register_function('via_load', function(keys)
  local done = false
  return load(function()
    if done then return nil end
    done = true
    return "return _G.redis.call('DEL', ...)"
  end)(keys[1])
end)
redis.register_function('via_getfenv', function(keys)
  local g = rawget(_G, 'getfenv')
  if not g then return 'none' end
  return g(1).redis.call('DEL', keys[1])
end)
redis.register_function('via_setfenv', function()
  local s = rawget(_G, 'setfenv')
  if not s then return 'none' end
  local r = s(1, {})
  return r
end)
redis.register_function('sealed', function()
  return {rawequal(_G, _G._G) and 1 or 0, rawequal(redis, _G.redis) and 1 or 0, rawequal(redis, redis.call) and 1 or 0}
end)
`

func TestMonitorLibraryStandIns(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := e.direct()
	v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, v.do("FUNCTION", "LOAD", "REPLACE", standInLib), bulk("standins"))
	eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
	for _, fn := range []string{"via_g", "via_loadstring", "via_load"} {
		mustContain(t, s.do("FCALL", fn, "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	}
	if got := s.do("FCALL", "via_getfenv", "1", "v:lock"); got != bulk("none") {
		mustContain(t, got, "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
	}
	if got := s.do("FCALL", "via_setfenv", "0"); got != bulk("none") {
		mustContain(t, got, "setfenv is refused for a function whose environment is Valkey's globals")
	}
	eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	eq(t, s.do("FCALL", "sealed", "0"), "*3\r\n:1\r\n:1\r\n:1\r\n")

	// While a library loads, Valkey offers no loadstring: its own error.
	const atLoad = "#!lua name=atload\nlocal f = loadstring('return 1')\nredis.register_function('f', function() return 1 end)\n"
	want := "Script attempted to access nonexistent global variable 'loadstring'"
	mustContain(t, dialRaw(t, e.srv.Addr).do("FUNCTION", "LOAD", atLoad), want)
	mustContain(t, v.do("FUNCTION", "LOAD", atLoad), want)
}

// A library is laid out as a monitored script: its code is the chunk's
// top level after the monitor's statement ("local redis, ... =
// (function() <monitor> end)(); <line 2>"), so nothing in it can close a
// block of the monitor's or run before it, with no check of its text.
// Each text below tries; loaded through lockproxy it is refused (Valkey's
// own compile error, as Valkey answers it direct) or every function it
// registers is monitored. Asserted from Valkey directly: no function of it
// runs unmonitored, and the victim's lock is unchanged.
func TestMonitorLibraryLayoutHostile(t *testing.T) {
	const evil = "redis.register_function('evil', function(keys) return redis.call('DEL', keys[1]) end)"
	texts := []string{
		// Close the monitor's function, or the function the library once
		// went inside, and register at the chunk's top level.
		"end " + evil + " local _ = function()",
		"end end " + evil + " local _ = function() do",
		"end)() " + evil + " (function()",
		"end)(); " + evil + " local _ = (function()",
		"end)(); redis = _G.redis " + evil + " return (function()",
		"until true " + evil + " repeat",
		"return end " + evil + " do",
		// Close a long string, a long comment or a string of the monitor's.
		"]] end)() " + evil + " --[[",
		"]==] end)() " + evil + " --[==[",
		"' end)() " + evil + " local _ = '",
		"\" end)() " + evil + " local _ = \"",
		"*/ end)() " + evil,
		// Closers hidden from a lexer that misreads Lua: an escaped line
		// break, a long bracket's level, a comment's end of line.
		"local s = 'a\\\nb' end " + evil + " local _ = function()",
		"local s = [=[ ]] ]=] end " + evil + " local _ = function()",
		"--[=[ ]] ]=] end " + evil + " local _ = function()",
		"-- a comment\rend " + evil + " local _ = function()",
		// Reach what the monitor holds by name, or Valkey's redis.
		"local r = rawget(_G, 'redis') if r then r.register_function('evil', function(keys) return r.call('DEL', keys[1]) end) end " + evil,
		"local lr = LR or __lockproxy_lib or R " + evil,
		"setfenv(1, {}) " + evil,
		// Name register_function's arguments in another letter case, which
		// Valkey reads as the same (strcasecmp), or twice.
		"redis.register_function{function_name = 'evil', CALLBACK = function(keys) return redis.call('DEL', keys[1]) end}",
		"redis.register_function{FUNCTION_NAME = 'evil', Callback = function(keys) return redis.call('DEL', keys[1]) end, FLAGS = {}}",
		"redis.register_function{function_name = 'evil', callback = function(keys) return redis.call('DEL', keys[1]) end, callBack = function(keys) local k = keys[1] return redis.call('DEL', k) end}",
		// Not hostile: code starting a statement with "(".
		"(function() " + evil + " end)()",
	}
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := e.direct()
	dc := dialRaw(t, e.srv.Addr)
	v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
	loaded := 0
	for _, text := range texts {
		code := "#!lua name=hostile\n" + text + "\n"
		t.Run(text, func(t *testing.T) {
			dc.do("FUNCTION", "DELETE", "hostile")
			direct := dc.do("FUNCTION", "LOAD", code)
			dc.do("FUNCTION", "DELETE", "hostile")
			got := v.do("FUNCTION", "LOAD", code)
			if strings.HasPrefix(got, "-") {
				// Refused: Valkey's own error, as it answers the code
				// sent direct, and no library.
				if strings.HasPrefix(direct, "-") {
					eq(t, got, direct)
				}
				eq(t, dc.do("FUNCTION", "LIST", "LIBRARYNAME", "hostile"), "*0\r\n")
				return
			}
			eq(t, got, bulk("hostile"))
			loaded++
			// Loaded: every function it registered is monitored.
			list, _, err := resp.Parse([]byte(dc.do("FUNCTION", "LIST", "LIBRARYNAME", "hostile")))
			if err != nil || len(list.Elems) != 1 {
				t.Fatalf("FUNCTION LIST: %v %+v", err, list)
			}
			names := map[string]bool{}
			for j := 0; j+1 < len(list.Elems[0].Elems); j += 2 {
				if string(list.Elems[0].Elems[j].Str) == "functions" {
					for _, f := range list.Elems[0].Elems[j+1].Elems {
						names[string(field(f, "name"))] = true
					}
				}
			}
			for n := range names {
				if base, ok := strings.CutSuffix(n, "__lockproxy"); ok && names[base] {
					continue
				}
				if !names[n+"__lockproxy"] {
					t.Errorf("function %q registered without lockproxy's", n)
				}
				// A stranger's call through lockproxy may not delete
				// another's lock; a direct call after it (the monitor
				// set up by then) may write no lock.
				mustContain(t, s.do("FCALL", n, "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
				mustContain(t, dc.do("FCALL", n, "1", "v:lock"), "-LOCKED lockproxy refused DEL of \"v:lock\" inside a script")
			}
			if len(names) == 0 {
				t.Error("a library with no function loaded")
			}
		})
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
	}
	if loaded == 0 {
		t.Error("no text loaded: the monitored cases went untested")
	}
}

// field is a FUNCTION LIST entry's value for key.
func field(m resp.Value, key string) []byte {
	for j := 0; j+1 < len(m.Elems); j += 2 {
		if string(m.Elems[j].Str) == key {
			return m.Elems[j+1].Str
		}
	}
	return nil
}
