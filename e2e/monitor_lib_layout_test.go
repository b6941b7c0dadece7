package e2e_test

import (
	"testing"
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
