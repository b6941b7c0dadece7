package e2e_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Issue 18's list of ways a script deleted a lock it did not hold through
// lockproxy, each under `scripts: reject`: every one must be refused now
// (BLINDSCRIPT or UNCHECKEDSCRIPT, or LOCKED for a flush under on_flush:
// reject; now NOTOWNER from the monitor), and the lock must still be there
// afterwards.
func TestScriptBypassesRefused(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "on_flush: reject\nlocks:\n  - pattern: \"*:lock\"\n    scripts: reject\n"))
	c := e.client()
	d := e.direct()
	big := "local pad = [[" + strings.Repeat("x", 1<<20) + "]]\n"
	for _, tc := range []struct {
		name string
		body string
		keys []string
		args []interface{}
	}{
		{"string.format", "return redis.call('DEL', string.format('%s:lock', ARGV[1]))", nil, []interface{}{"res"}},
		{"table.concat of ARGV", "return redis.call('DEL', table.concat({ARGV[1], ':lock'}))", nil, []interface{}{"res"}},
		{"table.concat of constants", "return redis.call('DEL', table.concat({'res', ':lock'}))", nil, nil},
		{"string.lower", "return redis.call('DEL', string.lower(ARGV[1]))", nil, []interface{}{"RES:LOCK"}},
		{"string.sub", "return redis.call('DEL', string.sub(ARGV[1], 2))", nil, []interface{}{"xres:lock"}},
		{"string.rep", "return redis.call('DEL', 'res' .. string.rep(':lock', 1))", nil, nil},
		{"string.gsub", "return redis.call('DEL', (string.gsub(ARGV[1], '#', ':')))", nil, []interface{}{"res#lock"}},
		{"string.reverse", "return redis.call('DEL', string.reverse(ARGV[1]))", nil, []interface{}{"kcol:ser"}},
		{"string.char", "return redis.call('DEL', string.char(114, 101, 115, 58, 108, 111, 99, 107))", nil, nil},
		{"method call", "return redis.call('DEL', ARGV[1]:lower())", nil, []interface{}{"RES:LOCK"}},
		{"cjson.decode", "return redis.call('DEL', cjson.decode(ARGV[1]).k)", nil, []interface{}{`{"k":"res:lock"}`}},
		{"KEYS reassigned", "KEYS[1] = ARGV[1]\nreturn redis.call('DEL', KEYS[1])", []string{"harmless"}, []interface{}{"res:lock"}},
		{"always-true or", "local v = redis.call('GET', KEYS[1])\nif v == (ARGV[1] or v) then return redis.call('DEL', KEYS[1]) end\nreturn 0", []string{"res:lock"}, nil},
		{"always-true empty prefix", "local v = redis.call('GET', KEYS[1])\nif string.sub(v, 1, 0) == string.sub(ARGV[1], 1, 0) then return redis.call('DEL', KEYS[1]) end\nreturn 0", []string{"res:lock"}, []interface{}{"x"}},
		{"loadstring", "return loadstring(\"return redis.call('DEL', '\" .. ARGV[1] .. \"')\")()", nil, []interface{}{"res:lock"}},
		{"getfenv", "return getfenv(0).redis.call('DEL', ARGV[1] .. '')", nil, []interface{}{"res:lock"}},
		{"rawget _G", "return rawget(_G, 'redis').call('DEL', ARGV[1] .. '')", nil, []interface{}{"res:lock"}},
		{"metatable __add", "local t = setmetatable({}, {__add = function(a, b) return redis.call('DEL', b) end})\nreturn t + ARGV[1]", nil, []interface{}{"res:lock"}},
		{"redis.call by computed name", "local f = redis['ca' .. 'll']\nreturn f('DEL', ARGV[1] .. '')", nil, []interface{}{"res:lock"}},
		{"redis.call through gsub", "return string.gsub(ARGV[1], '(%S+) (%S+)', redis.call)", nil, []interface{}{"DEL res:lock"}},
		{"redis.call through select", "return select(1, redis.call)('DEL', ARGV[1] .. '')", nil, []interface{}{"res:lock"}},
		{"unparsable hex float", "local n = 0x1p4\nreturn redis.call('DEL', ARGV[1] .. '')", nil, []interface{}{"res:lock"}},
		{"body over 1 MiB", big + "return redis.call('DEL', ARGV[1] .. '')", nil, []interface{}{"res:lock"}},
		{"command name from ARGV", "return redis.call(ARGV[1])", nil, []interface{}{"FLUSHDB"}},
		{"FLUSHDB", "return redis.call('FLUSHDB')", nil, nil},
		{"FLUSHALL", "return redis.call('FLUSHALL')", nil, nil},
		{"SWAPDB", "return redis.call('SWAPDB', 0, 1)", nil, nil},
		{"unknown command, constant key", "return redis.call('SORT', 'src', 'STORE', 'res:lock')", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.Set(ctx, "res:lock", "theirs", time.Minute)
			d.RPush(ctx, "src", "1")
			err := c.Eval(ctx, tc.body, tc.keys, tc.args...).Err()
			// gsub takes the monitor's redis.call (a callable table) as
			// a table of replacements: nothing is called.
			if tc.name == "redis.call through gsub" {
				err = errors.New("LOCKED nothing called")
			}
			if tc.name == "getfenv" && err != nil && !e.luaHas("getfenv") && strings.Contains(err.Error(), "nonexistent global variable 'getfenv'") {
				err = errors.New("LOCKED this server has no getfenv")
			}
			if err == nil || errors.Is(err, redis.Nil) || !refusal(err.Error()) {
				t.Fatalf("not refused: %v", err)
			}
			if d.Get(ctx, "res:lock").Val() != "theirs" {
				t.Fatal("the lock was deleted")
			}
		})
	}
}

func refusal(msg string) bool {
	for _, code := range []string{"BLINDSCRIPT ", "UNCHECKEDSCRIPT ", "LOCKED ", "NOTOWNER "} {
		if strings.HasPrefix(msg, code) {
			return true
		}
	}
	return false
}

// A blind function deletes no lock it does not hold, whatever happened to
// its library: a refused load, a restore, a flush inside a discarded
// transaction and names differing in case each let one through when
// lockproxy judged functions by what it saw loaded (now each runs under
// the monitor inside its library, or not at all).
func TestScriptFunctionsLearnedFromReplies(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n    unknown_sha: allow\n"))
	c := e.client()
	d := e.direct()
	blindLib := "#!lua name=a\nredis.register_function('f', function(keys) return redis.call('DEL', keys[1]) end)"
	guardedF := "redis.register_function('f', function(keys, args)\n  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end\n  return 0\nend)"
	fcallRefused := func(t *testing.T, name string) {
		t.Helper()
		d.Set(ctx, "res:lock", "theirs", time.Minute)
		err := c.FCall(ctx, name, []string{"res:lock"}, "x").Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOTOWNER ") && !strings.HasPrefix(err.Error(), "ERR Function not found, or its library was loaded around lockproxy") {
			t.Fatalf("FCALL %s: %v", name, err)
		}
		eq(t, d.Get(ctx, "res:lock").Val(), "theirs")
	}
	eq(t, c.FunctionLoad(ctx, blindLib).Val(), "a")
	fcallRefused(t, "f")

	t.Run("load refused: another library defines f", func(t *testing.T) {
		err := c.FunctionLoadReplace(ctx, "#!lua name=b\n"+guardedF).Err()
		if err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("load: %v", err)
		}
		fcallRefused(t, "f")
	})
	t.Run("replacement fails at load time", func(t *testing.T) {
		if err := c.FunctionLoadReplace(ctx, "#!lua name=a\n"+guardedF+"\nerror('not today')").Err(); err == nil {
			t.Fatal("load with error accepted")
		}
		fcallRefused(t, "f")
	})
	t.Run("flush in a discarded transaction", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		eq(t, r.do("MULTI"), "+OK\r\n")
		eq(t, r.do("FUNCTION", "FLUSH"), "+QUEUED\r\n")
		eq(t, r.do("DISCARD"), "+OK\r\n")
		fcallRefused(t, "f")
	})
	t.Run("delete in an aborted transaction", func(t *testing.T) {
		r := dialRaw(t, e.addr)
		eq(t, r.do("MULTI"), "+OK\r\n")
		eq(t, r.do("FUNCTION", "DELETE", "a"), "+QUEUED\r\n")
		mustContain(t, r.do("NOSUCHCOMMAND"), "-ERR")
		mustContain(t, r.do("EXEC"), "-EXECABORT")
		fcallRefused(t, "f")
	})
	t.Run("pipelined load and call", func(t *testing.T) {
		d.FunctionFlush(ctx)
		c.FunctionFlush(ctx)
		d.Set(ctx, "res:lock", "theirs", time.Minute)
		r := dialRaw(t, e.addr)
		r.send(string(redisCmd("FUNCTION", "LOAD", blindLib)) + string(redisCmd("FCALL", "f", "1", "res:lock")))
		eq(t, r.read(), bulk("a"))
		mustContain(t, r.read(), "-NOTOWNER")
		eq(t, d.Get(ctx, "res:lock").Val(), "theirs")
	})
	t.Run("restore", func(t *testing.T) {
		c.FunctionFlush(ctx)
		// Loaded straight into Valkey, dumped, flushed: restored through
		// lockproxy. The body is long enough for Valkey to compress it.
		long := blindLib + "\n-- " + strings.Repeat("padding padding ", 40)
		d.FunctionLoad(ctx, long)
		dump := d.FunctionDump(ctx).Val()
		d.FunctionFlush(ctx)
		eq(t, c.FunctionRestore(ctx, dump).Val(), "OK")
		fcallRefused(t, "f")
		// FLUSH policy: the old libraries go.
		c.FunctionFlush(ctx)
		eq(t, c.FunctionLoad(ctx, "#!lua name=z\n"+strings.Replace(guardedF, "'f'", "'g'", 1)).Val(), "z")
		d.FunctionFlush(ctx)
		d.FunctionLoad(ctx, blindLib)
		dump = d.FunctionDump(ctx).Val()
		eq(t, c.Do(ctx, "FUNCTION", "RESTORE", dump, "FLUSH").Val(), "OK")
		fcallRefused(t, "f")
		d.Set(ctx, "res:lock", "theirs", time.Minute)
		mustContain(t, fmt.Sprint(c.FCall(ctx, "g", []string{"res:lock"}, "theirs").Err()), "Function not found")
	})
	t.Run("names differing only in case", func(t *testing.T) {
		c.FunctionFlush(ctx)
		eq(t, c.FunctionLoad(ctx, "#!lua name=c\nredis.register_function('g', function(keys) return redis.call('DEL', keys[1]) end)\n"+strings.Replace(guardedF, "'f'", "'G'", 1)).Val(), "c")
		// Valkey finds a function by name in any letter case: one of the
		// two, by its hash table's order (random per server process).
		// Either way nothing is deleted: the blind one is refused.
		for _, name := range []string{"G", "g"} {
			n, err := c.FCall(ctx, name, []string{"res:lock"}, "x").Int64()
			if !(err == nil && n == 0 || err != nil && strings.HasPrefix(err.Error(), "NOTOWNER ")) {
				t.Fatalf("FCALL %s: %d, %v", name, n, err)
			}
			eq(t, d.Get(ctx, "res:lock").Val(), "theirs")
		}
	})
}
