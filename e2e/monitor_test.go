package e2e_test

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/libscripts"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// Issue 26: scripts run under lockproxy's monitor. The victim V holds
// v:lock (value vtok) and {r}:flock, whose fence guards {r}:data, which V
// wrote. S held both before V (its grants are stale). Every shape below,
// sent by a stranger or by S, through EVAL or EVALSHA, must leave the
// victim's locks, the resource and lockproxy's own keys as they were,
// checked from a direct connection; and the same as a function of a
// library the attacker loads through lockproxy (FCALL).

const monitorRules = `on_flush: reject
locks:
  - pattern: "{*}:flock"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: current
      unfenced_writes: reject
  - pattern: "*:lock"
`

type hostile struct {
	name string
	body string
	keys []string
	args []interface{}
}

// hostileShapes: lock removal and changes, fenced-resource writes and
// lockproxy-key tampering, each a way some analyser or wrapper once let
// through, or an attack on the monitor itself.
func hostileShapes() []hostile {
	var hs []hostile
	add := func(name, body string, keys []string, args ...interface{}) {
		hs = append(hs, hostile{name, body, keys, args})
	}
	vk := []string{"v:lock"}
	// Lock removal and changes, the lock named every way.
	add("DEL KEYS", "return redis.call('DEL', KEYS[1])", vk)
	add("UNLINK KEYS", "return redis.call('UNLINK', KEYS[1])", vk)
	add("DEL constant", "return redis.call('DEL', 'v:lock')", nil)
	add("DEL ARGV", "return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("command by string.char", "return redis.call(string.char(68,69,76), KEYS[1])", vk)
	add("finding 1: wrapper locals", "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end __lockproxy_before[1] = false return 0", vk, "wrong")
	add("finding 1: wrapper K", "__lockproxy_K = {} return redis.call('DEL', KEYS[1])", vk)
	add("true and", "return redis.call('DEL', true and 'v:lock')", nil)
	add("nil or", "return redis.call('DEL', nil or 'v:lock')", nil)
	add("1 and", "return redis.call('DEL', 1 and 'v:lock')", nil)
	add("k == k and k", "local k = 'v:lock' return redis.call('DEL', k == k and k)", nil)
	add("next of a constructor", "return redis.call('DEL', (next({['v:lock'] = 1})))", nil)
	add("pairs of a constructor", "for k in pairs({['v:lock'] = 1}) do redis.call('DEL', k) end return 1", nil)
	add("ipairs of a constructor", "for _, k in ipairs({'v:lock'}) do redis.call('DEL', k) end return 1", nil)
	add("table.remove", "return redis.call('DEL', table.remove({'v:lock'}))", nil)
	add("status_reply().ok", "return redis.call('DEL', redis.status_reply('v:lock').ok)", nil)
	add("ECHO", "return redis.call('DEL', redis.call('ECHO', 'v:lock'))", nil)
	add("rawequal and", "return redis.call('DEL', rawequal(1, 1) and 'v:lock')", nil)
	add("KEYS from data", "for _, k in ipairs(redis.call('KEYS', '*lock*')) do redis.call('DEL', k) end return 1", nil)
	add("SCAN from data", "local r = redis.call('SCAN', 0, 'COUNT', 1000) for _, k in ipairs(r[2]) do redis.pcall('DEL', k) end return 1", nil)
	add("SET over", "return redis.call('SET', KEYS[1], 'mine')", vk)
	add("SET XX", "return redis.call('SET', KEYS[1], 'mine', 'XX')", vk)
	add("SET GET", "return redis.call('SET', KEYS[1], 'mine', 'GET')", vk)
	add("SET KEEPTTL", "return redis.call('SET', KEYS[1], 'mine', 'KEEPTTL')", vk)
	add("GETSET", "return redis.call('GETSET', KEYS[1], 'mine')", vk)
	add("SETEX", "return redis.call('SETEX', KEYS[1], 100, 'mine')", vk)
	add("PSETEX", "return redis.call('PSETEX', KEYS[1], 100000, 'mine')", vk)
	add("MSET", "return redis.call('MSET', 'junk', 'x', KEYS[1], 'mine')", vk)
	add("APPEND", "return redis.call('APPEND', KEYS[1], 'x')", vk)
	add("SETRANGE", "return redis.call('SETRANGE', KEYS[1], 0, 'x')", vk)
	add("EXPIRE", "return redis.call('EXPIRE', KEYS[1], 1)", vk)
	add("PEXPIRE", "return redis.call('PEXPIRE', KEYS[1], 1)", vk)
	add("EXPIREAT past", "return redis.call('EXPIREAT', KEYS[1], 1)", vk)
	add("PEXPIREAT", "return redis.call('PEXPIREAT', KEYS[1], 1)", vk)
	add("PERSIST", "return redis.call('PERSIST', KEYS[1])", vk)
	add("GETEX PX", "return redis.call('GETEX', KEYS[1], 'PX', 1)", vk)
	add("GETEX PERSIST", "return redis.call('GETEX', KEYS[1], 'PERSIST')", vk)
	add("GETDEL", "return redis.call('GETDEL', KEYS[1])", vk)
	add("RENAME away", "return redis.call('RENAME', KEYS[1], 'junk2')", vk)
	add("RENAME onto", "return redis.call('RENAME', 'junk', KEYS[1])", vk)
	add("RENAMENX away", "return redis.call('RENAMENX', KEYS[1], 'junk2')", vk)
	add("MOVE", "return redis.call('MOVE', KEYS[1], 1)", vk)
	add("COPY REPLACE onto", "return redis.call('COPY', 'junk', KEYS[1], 'REPLACE')", vk)
	add("RESTORE REPLACE", "local d = redis.call('DUMP', 'junk') return redis.call('RESTORE', KEYS[1], 0, d, 'REPLACE')", vk)
	add("SORT STORE", "return redis.call('SORT', 'junklist', 'STORE', KEYS[1])", vk)
	add("BITOP", "return redis.call('BITOP', 'OR', KEYS[1], 'junk', 'junk')", vk)
	add("SUNIONSTORE", "return redis.call('SUNIONSTORE', KEYS[1], 'junkset')", vk)
	add("ZUNIONSTORE", "return redis.call('ZUNIONSTORE', KEYS[1], 1, 'junkz')", vk)
	add("LMOVE", "return redis.call('LMOVE', 'junklist', KEYS[1], 'LEFT', 'LEFT')", vk)
	add("FLUSHDB", "return redis.call('FLUSHDB')", nil)
	add("FLUSHALL", "return redis.call('FLUSHALL')", nil)
	add("SWAPDB", "return redis.call('SWAPDB', 0, 1)", nil)
	add("flush named from ARGV", "return redis.call(ARGV[1])", nil, "FLUSHDB")
	add("many arguments", "local t = {'DEL'} for i = 1, 200 do t[#t + 1] = 'junk' .. i end t[#t + 1] = KEYS[1] return redis.call(unpack(t))", vk)
	add("pcall then DEL", "redis.pcall('DEL', KEYS[1]) return redis.pcall('UNLINK', KEYS[1])", vk)
	add("pcall(redis.call)", "local ok, e = pcall(redis.call, 'DEL', KEYS[1]) return redis.call('DEL', KEYS[1])", vk)
	add("ARGV overwritten with the token", "ARGV[1] = redis.call('GET', KEYS[1]) if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", vk, "x")
	add("ARGV appended", "table.insert(ARGV, redis.call('GET', KEYS[1])) return redis.call('DEL', KEYS[1])", vk)
	add("KEYS reassigned", "KEYS[1] = ARGV[1] return redis.call('DEL', KEYS[1])", []string{"junk"}, "v:lock")
	add("set_repl none", "redis.set_repl(redis.REPL_NONE) return redis.call('DEL', KEYS[1])", vk)
	add("setresp 3", "redis.setresp(3) return redis.call('DEL', KEYS[1])", vk)
	// The sandbox: every way to the real redis.
	add("close the wrapper's block", "end end end return redis.call('DEL', 'v:lock')", nil)
	add("close the wrapper's call", "end)() return redis.call('DEL', 'v:lock') --", nil)
	add("continue the wrapper's statement", "(redis.call)('DEL', 'v:lock')", nil)
	add("continue the wrapper's call", "('DEL', 'v:lock')", nil)
	add("index the wrapper's result", ".call('DEL', 'v:lock')", nil)
	add("loadstring", "return loadstring(\"return redis.call('DEL', 'v:lock')\")()", nil)
	add("load of a function", "local s = \"return redis.call('DEL', 'v:lock')\" local done = false return load(function() if done then return nil end done = true return s end)()", nil)
	add("getfenv(0)", "return getfenv(0).redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("getfenv(1)", "return getfenv(1).redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("getfenv(2)", "local e = getfenv(2) return e.redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("getfenv(3)", "local ok, e = pcall(getfenv, 3) if ok and e then return e.redis.call('DEL', ARGV[1]) end return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("getfenv of a C function", "return getfenv(tostring).redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("getfenv of redis.pcall", "return getfenv(redis.pcall).redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("rawget _G", "return rawget(_G, 'redis').call('DEL', ARGV[1])", nil, "v:lock")
	add("_G.redis", "return _G.redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("_G._G._G", "return _G._G._G.server.call('DEL', ARGV[1])", nil, "v:lock")
	add("getmetatable(redis)", "local m = getmetatable(redis) if m then return m.__index.call('DEL', ARGV[1]) end return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("getmetatable(_G).__index", "local m = getmetatable(_G) local r = type(m) == 'table' and m.__index if type(r) == 'table' then return r.redis.call('DEL', ARGV[1]) end return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("setfenv(1, getfenv(0))", "setfenv(1, getfenv(0)) return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("setfenv(0)", "pcall(setfenv, 0, {}) return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("setfenv of redis.pcall", "pcall(setfenv, redis.pcall, {select = function() return 'SAFE' end, type = function() return 'nil' end}) return redis.pcall('DEL', ARGV[1])", nil, "v:lock")
	add("coroutine", "return coroutine.wrap(function() return redis.call('DEL', ARGV[1]) end)()", nil, "v:lock")
	add("coroutine getfenv(0)", "return coroutine.wrap(function() return getfenv(0).redis.call('DEL', ARGV[1]) end)()", nil, "v:lock")
	add("gsub with redis.call", "return string.gsub(ARGV[1], '(%S+) (%S+)', redis.call)", nil, "DEL v:lock")
	add("select(1, redis.call)", "return select(1, redis.call)('DEL', ARGV[1])", nil, "v:lock")
	add("redis['ca'..'ll']", "local f = redis['ca' .. 'll'] return f('DEL', ARGV[1])", nil, "v:lock")
	add("metatable __add", "local t = setmetatable({}, {__add = function(a, b) return redis.call('DEL', b) end}) return t + ARGV[1]", nil, "v:lock")
	add("__tostring argument", "local t = setmetatable({}, {__tostring = function() return 'v:lock' end}) return redis.pcall('DEL', t)", nil)
	add("__index argument", "local t = setmetatable({}, {__index = function() return 'v:lock' end}) return redis.call('DEL', t[1])", nil)
	add("table.sort comparator", "local t = {'v:lock', 'junk'} table.sort(t, function(a, b) redis.call('DEL', a) return a < b end) return 1", nil)
	add("cjson.decode", "return redis.call('DEL', cjson.decode(ARGV[1]).k)", nil, `{"k":"v:lock"}`)
	add("string.dump and loadstring", "local f = loadstring(string.dump(function() return 1 end)) if f then return f() end return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("error object", "local ok, e = pcall(redis.call, 'DEL', ARGV[1]) if type(e) == 'table' then e.err = 'OK' end return redis.call('DEL', ARGV[1])", nil, "v:lock")
	add("__gc proxy", "local p = newproxy(true) getmetatable(p).__gc = function() redis.call('DEL', 'v:lock') end p = nil collectgarbage() return 1", nil)
	add("string metatable", "local m = getmetatable('') m.__index = {lower = function() return redis.call('DEL', 'v:lock') end} return ('x'):lower()", nil)
	add("redis table written", "redis.call = function(...) return 1 end return redis.pcall('DEL', ARGV[1])", nil, "v:lock")
	add("global redis rebound", "redis = {} return server.call('DEL', ARGV[1])", nil, "v:lock")
	add("undefined wrapper global", "return __lockproxy_f", nil)
	add("close the function early", "return 1 end redis.call('DEL', 'v:lock') local _ = function()", nil)
	add("close it in a long comment", "return 1 --[[ ]] end redis.call('DEL', 'v:lock') local x = function()", nil)
	add("SELECT then DEL", "redis.call('SELECT', 0) return redis.call('DEL', KEYS[1])", vk)
	add("SELECT 1 then SELECT 0", "redis.call('SELECT', 1) redis.call('SELECT', 0) return redis.call('DEL', KEYS[1])", vk)
	// The fenced lock and its resource.
	rk := []string{"{r}:data"}
	add("fenced lock DEL", "return redis.call('DEL', KEYS[1])", []string{"{r}:flock"})
	add("fenced lock SET", "return redis.call('SET', KEYS[1], 'x')", []string{"{r}:flock"})
	add("resource SET", "return redis.call('SET', KEYS[1], 'bad')", rk)
	add("resource SET constant", "return redis.call('SET', '{r}:data', 'bad')", nil)
	add("resource SET ARGV", "return redis.call('SET', ARGV[1], 'bad')", nil, "{r}:data")
	add("resource APPEND", "return redis.call('APPEND', KEYS[1], 'bad')", rk)
	add("resource DEL", "return redis.call('DEL', KEYS[1])", rk)
	add("resource EXPIRE", "return redis.call('EXPIRE', KEYS[1], 1)", rk)
	add("resource RENAME onto", "return redis.call('RENAME', '{r}:junk', KEYS[1])", rk)
	add("resource COPY onto", "return redis.call('COPY', '{r}:junk', KEYS[1], 'REPLACE')", rk)
	add("resource true and", "return redis.call('SET', true and '{r}:data', 'bad')", nil)
	add("resource from KEYS of data", "for _, k in ipairs(redis.call('KEYS', '{r}:d*')) do redis.call('SET', k, 'bad') end return 1", nil)
	add("resource in db 1 then back", "redis.call('SELECT', 1) redis.call('SELECT', 0) return redis.call('SET', KEYS[1], 'bad')", rk)
	add("resource via loadstring", "return loadstring(\"return redis.call('SET', '{r}:data', 'bad')\")()", nil)
	add("resource setresp 3", "redis.setresp(3) return redis.call('SET', KEYS[1], 'bad')", rk)
	// lockproxy's own keys.
	add("grants DEL", "return redis.call('DEL', '{v:lock}:lockproxy:grants')", nil)
	add("grants SET", "return redis.call('SET', '{v:lock}:lockproxy:grants', 0)", nil)
	add("grants INCR", "return redis.call('INCR', KEYS[1])", []string{"{v:lock}:lockproxy:grants"})
	add("owners HSET", "return redis.call('HSET', '{v:lock}:lockproxy:owners', 'me', '9 0 0 vtok')", nil)
	add("owners DEL", "return redis.call('DEL', '{v:lock}:lockproxy:owners')", nil)
	add("owners RENAME", "return redis.call('RENAME', '{v:lock}:lockproxy:owners', '{v:lock}:junk')", nil)
	add("fence counter INCR", "return redis.call('INCR', '{r}:fence')", nil)
	add("fence counter DEL", "return redis.call('DEL', '{r}:fence')", nil)
	add("fence marks HSET", "return redis.call('HSET', '{r}:fence:high', '{r}:data', 0)", nil)
	add("fenced records HDEL", "return redis.call('DEL', '{r}:flock:lockproxy:owners')", nil)
	add("forged counter for a new lock", "return redis.call('SET', '{n:lock}:lockproxy:grants', 100)", nil)
	add("lockproxy keys from data", "for _, k in ipairs(redis.call('KEYS', '*lockproxy*')) do redis.pcall('DEL', k) end for _, k in ipairs(redis.call('KEYS', '*fence*')) do redis.pcall('DEL', k) end return 1", nil)
	add("wait key", "return redis.call('SET', '{x}:lockproxy:wait', 1)", nil)
	// The epoch hash (rewrite.EpochKey) has no ":lockproxy:" in its name:
	// an epoch written by a script would move every later token's floor
	// and a rule's lock delay.
	add("epoch HSET", "return redis.call('HSET', 'lockproxy:epoch', 'epoch', '1000000000', 'run', 'x')", nil)
	add("epoch HSET in KEYS", "return redis.call('HSET', KEYS[1], 'changed', '99999999999999')", []string{"lockproxy:epoch"})
	// A slot's lock-delay mark in front of a cluster (rewrite.SlotEpochKey).
	add("slot epoch HSET", "return redis.call('HSET', '{v:lock}:lockproxy:epoch', 'epoch', '0', 'changed', '0')", nil)
	return hs
}

// snapshot is every key but the junk ones, as DUMP and PEXPIRETIME say.
func snapshot(t *testing.T, d *redis.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, db := range []int{0, 1} {
		d.Do(ctx, "SELECT", db)
		for _, k := range d.Keys(ctx, "*").Val() {
			if strings.Contains(k, "junk") {
				continue
			}
			out[fmt.Sprintf("%d/%s", db, k)] = fmt.Sprintf("%q %d", d.Dump(ctx, k).Val(), d.Do(ctx, "PEXPIRETIME", k).Val())
		}
	}
	d.Do(ctx, "SELECT", 0)
	return out
}

func diffSnapshots(before, after map[string]string) string {
	var diffs []string
	for k, v := range before {
		if after[k] != v {
			diffs = append(diffs, "changed or gone: "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "new: "+k)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

func TestMonitorHostileShapes(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := redis.NewClient(&redis.Options{Addr: e.srv.Addr, MaxRetries: -1, DB: 0, PoolSize: 1})
	t.Cleanup(func() { d.Close() })
	v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	stranger := dialRaw(t, e.addr)
	setup := func(t *testing.T) map[string]string {
		t.Helper()
		d.FlushAll(ctx)
		// S takes both locks, loses them (as to an expiry), V takes them
		// and writes the resource.
		eq(t, s.do("SET", "v:lock", "stok", "NX"), "+OK\r\n")
		eq(t, s.do("SET", "{r}:flock", "stok", "NX"), "+OK\r\n")
		d.Del(ctx, "v:lock", "{r}:flock")
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, v.do("SET", "{r}:flock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, v.do("SET", "{r}:data", "good"), "+OK\r\n")
		d.Set(ctx, "junk", "x", 0)
		d.Set(ctx, "{r}:junk", "x", 0)
		d.RPush(ctx, "junklist", "1")
		d.SAdd(ctx, "junkset", "1")
		d.ZAdd(ctx, "junkz", redis.Z{Score: 1, Member: "1"})
		return snapshot(t, d)
	}
	shapes := hostileShapes()
	if len(shapes) < 80 {
		t.Fatalf("%d shapes, want at least 80", len(shapes))
	}
	refused := 0
	for _, h := range shapes {
		for _, who := range []struct {
			name string
			c    *raw
		}{{"stranger", stranger}, {"stale holder", s}} {
			for _, via := range []string{"EVAL", "EVALSHA", "FCALL"} {
				t.Run(h.name+"/"+who.name+"/"+via, func(t *testing.T) {
					before := setup(t)
					args := []string{via, h.body, fmt.Sprint(len(h.keys))}
					switch via {
					case "EVALSHA":
						if got := who.c.do("SCRIPT", "LOAD", h.body); got != bulk(sha1hex(h.body)) {
							mustContain(t, got, "-ERR Error compiling script")
							return
						}
						args[1] = sha1hex(h.body)
					case "FCALL":
						// The body as a function of a library the attacker
						// loads through lockproxy (KEYS and ARGV are its
						// parameters).
						lib := "#!lua name=hostile\nredis.register_function('hostile', function(KEYS, ARGV) " + h.body + "\nend)"
						if got := who.c.do("FUNCTION", "LOAD", "REPLACE", lib); got != bulk("hostile") {
							if !strings.HasPrefix(got, "-ERR Error registering functions") && !strings.HasPrefix(got, "-ERR Error compiling function") {
								t.Fatalf("FUNCTION LOAD: %q", got)
							}
							return
						}
						args[1] = "hostile"
					}
					args = append(args, h.keys...)
					for _, a := range h.args {
						args = append(args, fmt.Sprint(a))
					}
					reply := who.c.do(args...)
					if strings.HasPrefix(reply, "-") {
						refused++
					}
					if diff := diffSnapshots(before, snapshot(t, d)); diff != "" {
						t.Fatalf("reply %q; %s", reply, diff)
					}
					// Nothing the script did gave the attacker a grant.
					if got := who.c.do("DEL", "v:lock"); got == ":1\r\n" {
						t.Fatal("the attacker's DEL deleted the lock afterwards")
					}
				})
			}
		}
	}
	t.Logf("%d shapes, %d runs answered with an error", len(shapes), refused)
}

// Issue 26's findings, each as reported (all reproduced on main).
func TestMonitorFindings(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := e.direct()
	fresh := func(t *testing.T) (v, stranger *raw) {
		t.Helper()
		d.FlushAll(ctx)
		v, stranger = dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, v.do("SET", "{r}:flock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, v.do("SET", "{r}:data", "good"), "+OK\r\n")
		return v, stranger
	}
	intact := func(t *testing.T) {
		t.Helper()
		eq(t, d.Get(ctx, "v:lock").Val(), "vtok")
		eq(t, d.Get(ctx, "{r}:data").Val(), "good")
		eq(t, d.Get(ctx, "{r}:fence").Val(), "1")
		eq(t, d.Get(ctx, "{v:lock}:lockproxy:grants").Val(), "1")
	}
	t.Run("1: the wrapper's locals are not the body's", func(t *testing.T) {
		_, s := fresh(t)
		got := s.do("EVAL", "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) end __lockproxy_before[1] = false return 0", "1", "v:lock", "wrong")
		mustContain(t, got, "-ERR user_script:1: Script attempted to access nonexistent global variable '__lockproxy_before'")
		mustContain(t, s.do("DEL", "v:lock"), "-NOTOWNER")
		intact(t)
	})
	t.Run("2: SELECT inside a script, stale holder's write", func(t *testing.T) {
		fresh(t)
		s := dialRaw(t, e.addr)
		eq(t, s.do("SELECT", "1"), "+OK\r\n")
		eq(t, s.do("SET", "{r}:flock", "stok", "NX"), "+OK\r\n") // a grant in db 1
		got := s.do("EVAL", "redis.call('SELECT', 0) return redis.call('SET', KEYS[1], 'bad')", "1", "{r}:data")
		if !strings.HasPrefix(got, "-STALE") && !strings.HasPrefix(got, "-UNFENCED") {
			t.Fatalf("got %q", got)
		}
		intact(t)
	})
	t.Run("2: SELECT inside a script, no grant minted elsewhere", func(t *testing.T) {
		d.FlushAll(ctx)
		v, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, v.do("SELECT", "1"), "+OK\r\n")
		eq(t, v.do("SET", "v:lock", "vtok", "NX", "PX", "600000"), "+OK\r\n")
		s.do("EVAL", "redis.call('SELECT', 1) return redis.call('SET', KEYS[1], 'x', 'NX')", "1", "v:lock")
		eq(t, s.do("SELECT", "1"), "+OK\r\n")
		mustContain(t, s.do("DEL", "v:lock"), "-NOTOWNER")
		d1 := redis.NewClient(&redis.Options{Addr: e.srv.Addr, DB: 1})
		defer d1.Close()
		eq(t, d1.Get(ctx, "v:lock").Val(), "vtok")
	})
	for _, tc := range []struct{ name, body string }{
		{"3: a constant and", "return redis.call('DEL', true and 'v:lock')"},
		{"3: a constant or", "return redis.call('DEL', nil or 'v:lock')"},
		{"3: k == k and k", "local k = 'v:lock' return redis.call('DEL', k == k and k)"},
		{"3: the counter forged", "return redis.call('SET', '{v:lock}:lockproxy:grants', 0)"},
		{"4: next", "return redis.call('DEL', (next({['v:lock'] = 1})))"},
		{"4: table.remove", "return redis.call('DEL', table.remove({'v:lock'}))"},
		{"4: status_reply", "return redis.call('DEL', redis.status_reply('v:lock').ok)"},
		{"4: ECHO", "return redis.call('DEL', redis.call('ECHO', 'v:lock'))"},
		{"5: key names from data", "for _, k in ipairs(redis.call('KEYS', '{r}*')) do redis.pcall('DEL', k) end for _, k in ipairs(redis.call('KEYS', '*lock*')) do redis.pcall('DEL', k) end return 1"},
		{"the DEL by string.char", "return redis.call(string.char(68,69,76), 'v:lock')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := fresh(t)
			s.do("EVAL", tc.body, "0")
			intact(t)
			mustContain(t, s.do("DEL", "v:lock"), "-NOTOWNER")
		})
	}
	t.Run("the DEL by string.char, the lock in KEYS", func(t *testing.T) {
		_, s := fresh(t)
		mustContain(t, s.do("EVAL", "return redis.call(string.char(68,69,76), KEYS[1])", "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
		intact(t)
	})
}

// The lock libraries' own scripts reply the same through lockproxy as
// straight from Valkey, each lock taken on one connection of a pool and
// renewed and released from another.
func TestMonitorLibrariesDifferential(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	other := valkeytest.Start(t).Addr
	via := [2]*raw{dialRaw(t, e.addr), dialRaw(t, e.addr)}
	direct := [2]*raw{dialRaw(t, other), dialRaw(t, other)}
	type step struct {
		conn int
		args []string
	}
	ev := func(conn int, body string, keys []string, args ...string) step {
		a := append([]string{"EVAL", body, fmt.Sprint(len(keys))}, keys...)
		return step{conn, append(a, args...)}
	}
	f := func(name string) string { return luaFile(t, name) }
	hk := []string{"h:lock", "redisson_lock__channel:{h}"}
	ma := []string{"ma1:lock", "ma2:lock"}
	emq := []string{"emq:{q}:pending", "emq:{q}:active"}
	steps := []step{
		// bsm/redislock
		ev(0, libscripts.RedislockObtain, []string{"rl:lock"}, "tok1", "0", "60000"),
		ev(1, libscripts.RedislockObtain, []string{"rl:lock"}, "tok2", "0", "60000"),
		ev(1, libscripts.RedislockRelease, []string{"rl:lock"}, "tok2"),
		ev(1, libscripts.RedislockRelease, []string{"rl:lock"}, "tok1"),
		ev(0, libscripts.RedislockRelease, []string{"rl:lock"}, "tok1"),
		// go-redsync: SET NX, then its extend and delete scripts
		{0, []string{"SET", "rs:lock", "tok", "NX", "PX", "60000"}},
		ev(1, f("extend.lua"), []string{"rs:lock"}, "other", "60000", "0"),
		ev(1, f("extend.lua"), []string{"rs:lock"}, "tok", "60000", "0"),
		ev(1, f("canonical_release.lua"), []string{"rs:lock"}, "other"),
		ev(1, f("canonical_release.lua"), []string{"rs:lock"}, "tok"),
		// node-redlock
		ev(0, f("multi_acquire.lua"), ma, "t", "30000"),
		ev(1, f("multi_acquire.lua"), ma, "u", "30000"),
		ev(1, f("multi_extend.lua"), ma, "u", "90000"),
		ev(1, f("multi_extend.lua"), ma, "t", "90000"),
		ev(1, f("multi_each_release.lua"), ma, "u"),
		ev(1, f("multi_each_release.lua"), ma, "t"),
		// redis-py: SET NX PX, reacquire, release
		{0, []string{"SET", "py:lock", "tok", "NX", "PX", "60000"}},
		ev(1, f("refresh.lua"), []string{"py:lock"}, "other", "60000"),
		ev(1, f("refresh.lua"), []string{"py:lock"}, "tok", "60000"),
		ev(1, f("release_neg1.lua"), []string{"py:lock"}, "other"),
		ev(1, f("release_neg1.lua"), []string{"py:lock"}, "tok"),
		ev(1, f("release_neg1.lua"), []string{"py:lock"}, "tok"),
		// Redisson: reentrant hash lock
		ev(0, f("hash_lock.lua"), hk[:1], "30000", "owner-1"),
		ev(0, f("hash_lock.lua"), hk[:1], "30000", "owner-1"),
		ev(1, f("hash_lock.lua"), hk[:1], "30000", "owner-2"),
		ev(1, f("hash_renew.lua"), hk[:1], "60000", "owner-2"),
		ev(1, f("hash_renew.lua"), hk[:1], "60000", "owner-1"),
		ev(1, f("hash_unlock.lua"), hk, "unlocked", "30000", "owner-2"),
		ev(1, f("hash_unlock.lua"), hk, "unlocked", "30000", "owner-1"),
		ev(0, f("hash_unlock.lua"), hk, "unlocked", "30000", "owner-1"),
		{0, []string{"EXISTS", "h:lock", "rl:lock", "rs:lock", "ma1:lock", "py:lock"}},
		// EchoMQ: claim and complete
		{0, []string{"ZADD", "emq:{q}:pending", "1", "7"}},
		{0, []string{"HSET", "emq:{q}:job:7", "payload", "hello"}},
		ev(0, f("echomq_claim.lua"), emq, "20260101000000", "30000", "emq:{q}:job:"),
		{0, []string{"ZADD", "emq:{q}:pending", "1", "7"}},
		ev(1, f("echomq_claim.lua"), emq, "20260101000000", "30000", "emq:{q}:job:"),
		ev(0, f("echomq_complete.lua"), []string{"emq:{q}:active", "emq:{q}:job:7", "emq:{q}:done"}, "7", "1"),
		ev(1, f("echomq_complete.lua"), []string{"emq:{q}:active", "emq:{q}:job:7", "emq:{q}:done"}, "7", "2"),
	}
	// Leases left (PTTL replies) differ by the milliseconds between runs.
	lease := regexp.MustCompile(`:[0-9]{4,}\r\n`)
	for i, s := range steps {
		got := lease.ReplaceAllString(via[s.conn].do(s.args...), ":N\r\n")
		want := lease.ReplaceAllString(direct[s.conn].do(s.args...), ":N\r\n")
		if got != want {
			t.Errorf("step %d %q %q: through lockproxy %q, direct %q", i, s.args[0], s.args[len(s.args)-1], got, want)
		}
	}
}

// What a holder may do in a script, checked call by call: take a lock and
// write the key it guards in the same script (the grant is minted right
// after the acquisition), release its own lock whatever the script's
// replication mode or protocol, change its lease.
func TestMonitorHolderScripts(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	d := e.direct()
	h := dialRaw(t, e.addr)
	takeAndWrite := "redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 60000)\nreturn redis.call('SET', KEYS[2], 'mine')"
	eq(t, h.do("EVAL", takeAndWrite, "2", "{t}:flock", "{t}:data", "tok"), "+OK\r\n")
	eq(t, d.Get(ctx, "{t}:fence").Val(), "1")
	eq(t, d.Get(ctx, "{t}:data").Val(), "mine")
	eq(t, h.do("LOCKPROXY", "FENCE", "{t}:flock"), ":1\r\n")
	// Its own lock, released with DEL under REPL_NONE and RESP3: the
	// record goes with it.
	eq(t, h.do("SET", "h:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, h.do("EVAL", "redis.set_repl(redis.REPL_NONE)\nredis.setresp(3)\nredis.call('PEXPIRE', KEYS[1], 120000)\nreturn redis.call('DEL', KEYS[1])", "1", "h:lock"), ":1\r\n")
	eq(t, d.Exists(ctx, "h:lock", "{h:lock}:lockproxy:owners").Val(), int64(0))
	// Another client's lock, with the token in ARGV (a pool's other
	// connection): renewed and released.
	eq(t, h.do("SET", "p:lock", "ptok", "NX", "PX", "60000"), "+OK\r\n")
	other := dialRaw(t, e.addr)
	eq(t, other.do("EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], 90000) end return 0", "1", "p:lock", "ptok"), ":1\r\n")
	eq(t, other.do("EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", "1", "p:lock", "ptok"), ":1\r\n")
	eq(t, d.Exists(ctx, "p:lock").Val(), int64(0))
}

// In front of a cluster the same monitored text runs on every slot's node:
// locks in several slots, taken and released by the library's scripts,
// a stranger's DEL inside a script refused on each.
func TestMonitorCluster(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	m := slotMap(t, cl)
	h, s := dialRaw(t, e.addr), dialRaw(t, e.addr)
	for i := 0; i < 6; i++ {
		k := fmt.Sprintf("mon%d:lock", i)
		tok := "tok" + fmt.Sprint(i)
		eq(t, h.do("EVAL", libscripts.RedislockObtain, "1", k, tok, "0", "60000"), "+OK\r\n")
		mustContain(t, s.do("EVAL", "return redis.call('DEL', KEYS[1])", "1", k), "-NOTOWNER lockproxy refused DEL")
		mustContain(t, s.do("EVAL", "redis.call('SELECT', 0) return redis.call('SET', KEYS[1], 'x')", "1", k), "-")
		eq(t, directTo(t, m, k, "GET", k), bulk(tok))
		eq(t, s.do("EVAL", libscripts.RedislockRelease, "1", k, tok), ":1\r\n")
		eq(t, directTo(t, m, k, "EXISTS", k), ":0\r\n")
	}
}

// A function whose command name is built at run time is checked on the
// command it actually calls (the analysis could not read it).
func TestMonitorFunctionBuiltName(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	c := dialRaw(t, e.addr)
	lib := "#!lua name=chars\nredis.register_function('del', function(keys) return redis.call(string.char(68,69,76), keys[1]) end)"
	eq(t, c.do("FUNCTION", "LOAD", lib), bulk("chars"))
	d.Set(ctx, "v:lock", "theirs", 0)
	mustContain(t, c.do("FCALL", "del", "1", "v:lock"), "-NOTOWNER lockproxy refused DEL of \"v:lock\" inside a script")
	eq(t, d.Get(ctx, "v:lock").Val(), "theirs")
}

// Finalizers (__gc) planted by a script run at any allocation of a later
// one, another client's too: one raising an error there would interrupt
// that script anywhere (between a call that takes a lock and the lock's
// records), and Valkey 8.0.1 exits when one raises outside a script. So
// newproxy, the only way to a finalizer, is refused, in every script
// (a script naming it does not skip the monitor).
func TestMonitorFinalizersRefused(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	c := dialRaw(t, e.addr)
	plant := "for i = 1, 3000 do local p = newproxy(true) getmetatable(p).__gc = function() error('boom') end end return 1"
	refused := "newproxy is refused"
	if !e.luaHas("newproxy") {
		// Where lua-enable-insecure-api is off there is no newproxy:
		// the script meets Valkey's own error, through lockproxy too.
		refused = "Script attempted to access nonexistent global variable 'newproxy'"
	}
	mustContain(t, c.do("EVAL", plant, "0"), "-ERR user_script:1: "+refused)
	mustContain(t, c.do("EVAL", "local f = newproxy return f(true)", "0"), refused)
	for i := 0; i < 10; i++ {
		eq(t, c.do("EVAL", "local t = {} for i = 1, 2000 do t[i] = {i} end return redis.call('SET', KEYS[1], 'v', 'NX') and 1 or 0", "1", fmt.Sprintf("gc%d:lock", i)), ":1\r\n")
	}
	eq(t, c.do("PING"), "+PONG\r\n")
}

// A monitored script's lines are the client's: a line of a long string
// that starts with "--" was dropped as if it were a comment line (the
// reply below was "" through lockproxy on ad5d4fb). The same for a
// function's.
func TestMonitorKeepsCommentLikeLines(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	c, d := dialRaw(t, e.addr), dialRaw(t, e.srv.Addr)
	for _, body := range []string{
		"--[[\nlong comment\n]]\nreturn redis.call('GET', KEYS[1])",
		"-- a comment\nreturn redis.call('NOSUCH', KEYS[1])",
		"local s = [[\n-- not a comment\n]]\nredis.call('GET', KEYS[1]) return s",
	} {
		got, want := c.do("EVAL", body, "1", "x"), d.do("EVAL", body, "1", "x")
		if got != want {
			t.Errorf("%q: through lockproxy %q, direct %q", body, got, want)
		}
	}
	lib := "#!lua name=cl\nlocal s = [[\n-- not a comment\n]]\nredis.register_function('cl', function(keys) redis.call('GET', keys[1]) return s end)"
	eq(t, c.do("FUNCTION", "LOAD", lib), bulk("cl"))
	eq(t, c.do("FCALL", "cl", "1", "x"), bulk("-- not a comment\n"))
}

// A call Valkey itself refuses (no command, an argument that is neither a
// string nor a number, an unknown command) gets Valkey's own error from
// the monitor, by redis.call and redis.pcall, as the bare script gets it
// from Valkey: the monitor does not answer for a call that cannot run.
func TestMonitorCallErrorsTransparent(t *testing.T) {
	e := newEnv(t, rulesOptions(t, monitorRules))
	via, direct := dialRaw(t, e.addr), dialRaw(t, valkeytest.Start(t).Addr)
	for _, body := range []string{
		"return redis.call()",
		"return redis.call(1)",
		"return redis.call('NOSUCH', 'v:lock')",
		"return redis.call('GET', nil)",
		"return redis.call('DEL', {})",
		"return redis.call('DEL', true)",
		"return redis.pcall('DEL', {})",
		"return redis.call({}, 'v:lock')",
		"return redis.pcall({}, 'v:lock')",
		"return redis.call(setmetatable({}, {__tostring = function() return 'DEL' end}), 'v:lock')",
		"return redis.call('DEL')",
	} {
		got, want := via.do("EVAL", body, "0"), direct.do("EVAL", body, "0")
		if got != want {
			t.Errorf("%s: through lockproxy %q, direct %q", body, got, want)
		}
	}
}
