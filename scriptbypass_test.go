package lockproxy_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Issue 18's list of ways a script deleted a lock it did not hold through
// lockproxy, each under `scripts: reject`: every one must be refused now
// (BLINDSCRIPT or UNCHECKEDSCRIPT, or LOCKED for a flush under on_flush:
// reject), and the lock must still be there afterwards.
func TestScriptBypassesRefused(t *testing.T) {
	e := rulesEnv(t, "on_flush: reject\nlocks:\n  - pattern: \"*:lock\"\n    scripts: reject\n")
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
	for _, code := range []string{"BLINDSCRIPT ", "UNCHECKEDSCRIPT ", "LOCKED "} {
		if strings.HasPrefix(msg, code) {
			return true
		}
	}
	return false
}
