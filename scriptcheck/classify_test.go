package scriptcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readLua(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "lua", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// want is the expected verdict of KEYS[i] and, for blind and unknown, the
// line of the call that decided it.
type want struct {
	key     int
	verdict Verdict
	line    int
}

// The scripts under testdata/lua were written for these tests, each in the
// style of a well-known lock library or of EchoMQ's queue scripts.
var classifyFiles = []struct {
	file string
	keys []want
}{
	{"canonical_release.lua", []want{{1, Guarded, 0}}},
	{"release_neg1.lua", []want{{1, Guarded, 0}}},
	{"multi_mget_release.lua", []want{{1, Guarded, 0}, {2, Guarded, 0}, {5, Guarded, 0}}},
	{"multi_each_release.lua", []want{{1, Guarded, 0}, {3, Guarded, 0}}},
	{"pair_mget_release.lua", []want{{1, Guarded, 0}, {2, Guarded, 0}}},
	{"pcall_release.lua", []want{{1, Guarded, 0}}},
	{"hash_unlock.lua", []want{{1, Guarded, 0}, {2, Guarded, 0}}},
	{"hash_lock.lua", []want{{1, Guarded, 0}}},
	{"hash_renew.lua", []want{{1, Guarded, 0}}},
	{"refresh.lua", []want{{1, Guarded, 0}}},
	{"extend.lua", []want{{1, Guarded, 0}}},
	{"setnx_acquire.lua", []want{{1, Acquire, 0}}},
	{"exists_acquire.lua", []want{{1, Acquire, 0}}},
	{"setnx_expire_acquire.lua", []want{{1, Acquire, 0}}},
	{"obtain_or_refresh.lua", []want{{1, Guarded, 0}}},
	{"reentrant_obtain.lua", []want{{1, Guarded, 0}}},
	{"multi_acquire.lua", []want{{1, Acquire, 0}, {4, Acquire, 0}}},
	{"multi_extend.lua", []want{{1, Guarded, 0}, {3, Guarded, 0}}},
	{"blind_del.lua", []want{{1, Blind, 2}}},
	{"blind_del_before_compare.lua", []want{{1, Blind, 3}}},
	{"blind_const_compare.lua", []want{{1, Blind, 3}}},
	{"blind_other_key.lua", []want{{1, Blind, 3}, {2, Guarded, 0}}},
	{"blind_inverted.lua", []want{{1, Blind, 3}}},
	{"blind_renew.lua", []want{{1, Blind, 2}}},
	{"blind_set.lua", []want{{1, Blind, 2}}},
	{"unknown_dynamic.lua", []want{{1, Unknown, 2}}},
	{"unknown_index.lua", []want{{1, Unknown, 3}, {4, Unknown, 3}}},
	{"unknown_loop.lua", []want{{1, Unknown, 4}, {2, Unknown, 4}}},
	{"named_argv_del.lua", []want{{1, Guarded, 0}}},
	{"named_suffix_release.lua", []want{{1, Guarded, 0}}},
	{"echomq_claim.lua", []want{{1, Blind, 5}, {2, Blind, 13}}},
	{"echomq_complete.lua", []want{{1, Blind, 11}, {2, Guarded, 0}, {3, Blind, 13}}},
}

func TestClassifyFiles(t *testing.T) {
	for _, tc := range classifyFiles {
		t.Run(tc.file, func(t *testing.T) {
			r := Analyze(readLua(t, tc.file))
			if r.Err != "" {
				t.Fatalf("analysis gave up: %s (line %d)", r.Err, r.ErrLine)
			}
			for _, w := range tc.keys {
				v, site := r.Key(w.key)
				if v != w.verdict {
					t.Errorf("KEYS[%d]: %v, want %v; sites:\n%s", w.key, v, w.verdict, dumpSites(r))
					continue
				}
				if w.line != 0 && (site == nil || site.Line != w.line) {
					t.Errorf("KEYS[%d]: decided by %+v, want line %d", w.key, site, w.line)
				}
			}
		})
	}
}

func dumpSites(r *Report) string {
	var b strings.Builder
	for _, s := range r.Sites {
		b.WriteString("  ")
		b.WriteString(s.Target.String())
		b.WriteString(" line ")
		b.WriteString(string(rune('0' + s.Line%10)))
		b.WriteString(": ")
		b.WriteString(s.Verdict.String())
		b.WriteString(" - ")
		b.WriteString(s.Reason)
		b.WriteString("\n")
	}
	if r.Err != "" {
		b.WriteString("  err: " + r.Err + "\n")
	}
	return b.String()
}

// Named keys: the script names the key itself; the proxy resolves the name.
func TestNamedTargets(t *testing.T) {
	r := Analyze(readLua(t, "named_argv_del.lua"))
	if !r.Named() || len(r.Sites) != 1 {
		t.Fatalf("sites %+v", r.Sites)
	}
	s := r.Sites[0]
	if s.Verdict != Blind || s.Target.String() != "ARGV[1]" {
		t.Fatalf("site %+v", s)
	}
	names := s.Target.Names([][]byte{[]byte("k")}, [][]byte{[]byte("res:lock")}, nil)
	if len(names) != 1 || string(names[0]) != "res:lock" {
		t.Fatalf("names %q", names)
	}

	r = Analyze(readLua(t, "named_suffix_release.lua"))
	var got []string
	for _, s := range r.Sites {
		got = append(got, s.Target.String()+" "+s.Verdict.String())
	}
	if strings.Join(got, ", ") != `KEYS[1] .. ":lock" guarded, KEYS[1] .. ":lease" blind` {
		t.Fatalf("sites: %v", got)
	}
	n := r.Sites[0].Target.Names([][]byte{[]byte("job:7")}, nil, nil)
	if len(n) != 1 || string(n[0]) != "job:7:lock" {
		t.Fatalf("names %q", n)
	}
	if r.Sites[0].Target.Names(nil, nil, nil) != nil {
		t.Fatal("a name using a missing key resolved")
	}
}

func TestLibrary(t *testing.T) {
	body := readLua(t, "locklib.lua")
	if !IsLibrary(body) {
		t.Fatal("not a library")
	}
	lib := AnalyzeLibrary(body)
	if lib.Err != "" || lib.Name != "locklib" {
		t.Fatalf("%+v", lib)
	}
	for name, w := range map[string]want{
		"lock_release": {1, Guarded, 0},
		"lock_acquire": {1, Acquire, 0},
		"lock_force":   {1, Blind, 22},
	} {
		r := lib.Functions[name]
		if r == nil {
			t.Fatalf("%s not found in %v", name, lib.Functions)
		}
		v, site := r.Key(1)
		if v != w.verdict || w.line != 0 && site.Line != w.line {
			t.Errorf("%s: %v at %+v, want %v line %d", name, v, site, w.verdict, w.line)
		}
		if r.Function != name || r.Library != "locklib" || r.SHA != SHA1(body) {
			t.Errorf("%s: report names %q %q %q", name, r.Function, r.Library, r.SHA)
		}
	}
	if len(lib.Functions) != 3 {
		t.Errorf("functions: %v", lib.Functions)
	}
}

// Inline shapes, each a one-off.
func TestClassifyInline(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		key        int
		verdict    Verdict
		line       int
	}{
		{"upper-case commands via server.call", `if server.call('GET', KEYS[1]) == ARGV[1] then return server.call('UNLINK', KEYS[1]) end return 0`, 1, Guarded, 0},
		{"local alias of KEYS and ARGV", "local k, t = KEYS[1], ARGV[1]\nif redis.call('get', k) == t then return redis.call('del', k) end\nreturn 0", 1, Guarded, 0},
		{"assert as guard", "assert(redis.call('GET', KEYS[1]) == ARGV[1], 'not the owner')\nreturn redis.call('DEL', KEYS[1])", 1, Guarded, 0},
		{"condition kept in a local", "local mine = redis.call('GET', KEYS[1]) == ARGV[1]\nif mine then redis.call('DEL', KEYS[1]) end", 1, Guarded, 0},
		{"and-chained delete", "return redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('DEL', KEYS[1])", 1, Guarded, 0},
		{"or-chained delete is blind", "return redis.call('GET', KEYS[1]) == ARGV[1] or redis.call('DEL', KEYS[1])", 1, Blind, 1},
		{"token from cjson", "local o = cjson.decode(ARGV[1])\nif redis.call('GET', KEYS[1]) == o.token then return redis.call('DEL', KEYS[1]) end", 1, Guarded, 0},
		{"token with tostring", "if tostring(redis.call('GET', KEYS[1])) == tostring(ARGV[1]) then redis.call('DEL', KEYS[1]) end", 1, Guarded, 0},
		{"helper function", "local function rel(k, t)\n if redis.call('GET', k) == t then return redis.call('DEL', k) end\n return 0\nend\nreturn rel(KEYS[1], ARGV[1])", 1, Guarded, 0},
		{"helper function, blind", "local function rel(k)\n return redis.call('DEL', k)\nend\nreturn rel(KEYS[2])", 2, Blind, 2},
		{"helper escapes into a table", "local t = {}\nt.f = function(k) return redis.call('DEL', k) end\nreturn t.f(KEYS[1])", 1, Unknown, 2},
		{"recursion", "local function f(i)\n if i > #KEYS then return 0 end\n redis.call('DEL', KEYS[i])\n return f(i + 1)\nend\nreturn f(1)", 2, Unknown, 3},
		{"variable reassigned in a branch", "local k = KEYS[1]\nif ARGV[2] == 'x' then k = KEYS[2] end\nreturn redis.call('DEL', k)", 2, Unknown, 3},
		{"same key in both branches", "local k = KEYS[1]\nif ARGV[2] == 'x' then k = KEYS[1] end\nreturn redis.call('DEL', k)", 1, Blind, 3},
		{"guard in one branch only", "if ARGV[2] == '1' then\n if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\nend\nreturn redis.call('DEL', KEYS[1])", 1, Blind, 4},
		{"guard then loop", "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\nfor i = 1, 3 do redis.call('PEXPIRE', KEYS[1], ARGV[2]) end", 1, Guarded, 0},
		{"while loop reassigns the key", "local k = KEYS[1]\nlocal n = 0\nwhile n < 2 do\n redis.call('DEL', k)\n k = KEYS[2]\n n = n + 1\nend", 2, Unknown, 4},
		{"break spoils the all-keys check", "for i = 1, #KEYS do\n if redis.call('GET', KEYS[i]) ~= ARGV[1] then break end\nend\nreturn redis.call('DEL', unpack(KEYS))", 1, Blind, 4},
		{"GETDEL", "return redis.call('GETDEL', KEYS[1])", 1, Blind, 1},
		{"GETEX with options", "return redis.call('GETEX', KEYS[1], 'PX', 100)", 1, Blind, 1},
		{"GETEX alone reads", "return redis.call('GETEX', KEYS[1])", 1, Guarded, 0},
		{"read-only script", "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}", 1, Guarded, 0},
		{"SET with GET and NX", "return redis.call('SET', KEYS[1], ARGV[1], 'GET', 'NX')", 1, Acquire, 0},
		{"SET XX overwrites", "return redis.call('SET', KEYS[1], ARGV[1], 'XX')", 1, Blind, 1},
		{"SET with options from ARGV", "return redis.call('SET', KEYS[1], unpack(ARGV))", 1, Unknown, 1},
		{"SET IFEQ", "return redis.call('SET', KEYS[1], ARGV[2], 'IFEQ', ARGV[1])", 1, Guarded, 0},
		{"DELIFEQ with a token", "return redis.call('DELIFEQ', KEYS[1], ARGV[1])", 1, Guarded, 0},
		{"DELIFEQ with a constant", "return redis.call('DELIFEQ', KEYS[1], '1')", 1, Blind, 1},
		{"HDEL of the owner field", "return redis.call('HDEL', KEYS[1], ARGV[1])", 1, Guarded, 0},
		{"HDEL of a fixed field", "return redis.call('HDEL', KEYS[1], 'owner')", 1, Blind, 1},
		{"HGET owner compare", "if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('DEL', KEYS[1]) end", 1, Guarded, 0},
		{"HGET of own field truthy", "if redis.call('HGET', KEYS[1], ARGV[1]) then redis.call('HINCRBY', KEYS[1], ARGV[1], -1) end", 1, Guarded, 0},
		{"HGET owner against constant", "if redis.call('HGET', KEYS[1], 'owner') == 'me' then redis.call('DEL', KEYS[1]) end", 1, Blind, 1},
		{"RENAME source", "return redis.call('RENAME', KEYS[1], KEYS[2])", 1, Blind, 1},
		{"RENAME target", "return redis.call('RENAME', KEYS[1], KEYS[2])", 2, Blind, 1},
		{"RENAMENX target", "return redis.call('RENAMENX', KEYS[1], KEYS[2])", 2, Acquire, 0},
		{"COPY without REPLACE", "return redis.call('COPY', KEYS[1], KEYS[2])", 2, Acquire, 0},
		{"COPY REPLACE", "return redis.call('COPY', KEYS[1], KEYS[2], 'REPLACE')", 2, Blind, 1},
		{"MSET", "return redis.call('MSET', KEYS[1], 'a', KEYS[2], 'b')", 2, Blind, 1},
		{"MSETNX", "return redis.call('MSETNX', KEYS[1], 'a', KEYS[2], 'b')", 2, Acquire, 0},
		{"MSET value is not a key", "return redis.call('MSET', KEYS[1], KEYS[2])", 2, Guarded, 0},
		{"PUBLISH channel is not a key", "return redis.call('PUBLISH', KEYS[1], 'x')", 1, Guarded, 0},
		{"unknown command", "return redis.call('SORT', KEYS[1], 'STORE', KEYS[2])", 2, Unknown, 1},
		{"unknown command under a guard", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call(ARGV[2], KEYS[1]) end", 1, Guarded, 0},
		{"unpack(KEYS) delete", "return redis.call('DEL', unpack(KEYS))", 3, Blind, 1},
		{"unpack(KEYS, 2)", "return redis.call('DEL', unpack(KEYS, 2))", 1, Guarded, 0},
		{"unpack(KEYS, 2) second", "return redis.call('DEL', unpack(KEYS, 2))", 2, Blind, 1},
		{"table of keys", "local ks = {KEYS[1], KEYS[2]}\nreturn redis.call('DEL', unpack(ks))", 2, Blind, 2},
		{"table changed", "local ks = {KEYS[1]}\ntable.insert(ks, KEYS[2])\nreturn redis.call('DEL', unpack(ks))", 1, Unknown, 3},
		{"loop over table of keys", "for _, k in ipairs({KEYS[1], KEYS[2]}) do redis.call('DEL', k) end", 2, Unknown, 1},
		{"loadstring", "return loadstring(ARGV[1])()", 1, Unknown, 1},
		{"goto", "goto done\n::done::\nreturn 1", 1, Unknown, 1},
		{"KEYS changed", "KEYS[1] = ARGV[1]\nreturn redis.call('DEL', KEYS[1])", 1, Unknown, 1},
		{"parse error", "if redis.call('GET', KEYS[1]) == ARGV[1] then\nreturn 1\n", 1, Unknown, 0},
		{"shebang kept line numbers", "#!lua flags=allow-cross-slot-keys\nreturn redis.call('DEL', KEYS[1])", 1, Blind, 2},
		{"exists == 1 early return", "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end\nredis.call('SET', KEYS[1], ARGV[1])\nreturn 1", 1, Acquire, 0},
		{"not GET early return then create", "if redis.call('GET', KEYS[1]) then return 0 end\nreturn redis.call('SET', KEYS[1], ARGV[1], 'PX', 10)", 1, Acquire, 0},
		{"SET NX reply guards the follow-up", "if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end\nredis.call('PEXPIRE', KEYS[1], ARGV[2])\nreturn 1", 1, Acquire, 0},
		{"dynamic key name from stored data", "local k = redis.call('GET', KEYS[1])\nreturn redis.call('DEL', k)", 1, Guarded, 0},
		{"compare with another key's value", "if redis.call('GET', KEYS[1]) == redis.call('GET', KEYS[2]) then return redis.call('DEL', KEYS[1]) end", 1, Blind, 1},
		{"pcall of a function", "local ok = pcall(function()\n redis.call('DEL', KEYS[1])\nend)\nreturn ok", 1, Blind, 2},
		{"numeric loop over all keys, guarded", "for i = 1, #KEYS do\n if redis.call('GET', KEYS[i]) == ARGV[1] then redis.call('DEL', KEYS[i]) end\nend", 2, Guarded, 0},
		{"numeric loop from 2 is blind from 2", "for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end", 3, Blind, 1},
		{"numeric loop from 2 leaves 1", "for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end", 1, Guarded, 0},
		{"loop acquire without the early return", "for _, k in ipairs(KEYS) do\n if redis.call('EXISTS', k) == 1 then redis.call('INCR', 'n') end\nend\nfor _, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1]) end", 2, Blind, 4},
		{"GETRANGE compared with a constant", "if redis.call('GETRANGE', KEYS[1], 0, 3) == 'abcd' then redis.call('SET', KEYS[1], ARGV[1]) end", 1, Blind, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Analyze(tc.body)
			v, site := r.Key(tc.key)
			if v != tc.verdict {
				t.Fatalf("KEYS[%d]: %v, want %v\n%s", tc.key, v, tc.verdict, dumpSites(r))
			}
			if tc.line != 0 && (site == nil || site.Line != tc.line) {
				t.Fatalf("KEYS[%d]: decided by %+v, want line %d", tc.key, site, tc.line)
			}
			if strings.Contains(r.Err, "internal error") {
				t.Fatal(r.Err)
			}
		})
	}
}

func TestReportHelpers(t *testing.T) {
	r := Analyze("return 1")
	if v, s := r.Key(1); v != Guarded || s != nil || r.Overall() != Guarded {
		t.Fatalf("%v %v", v, s)
	}
	if Analyze(readLua(t, "setnx_acquire.lua")).Overall() != Acquire {
		t.Fatal("acquire overall")
	}
	if Analyze(readLua(t, "echomq_complete.lua")).Overall() != Blind {
		t.Fatal("blind overall")
	}
	big := strings.Repeat(" ", MaxBody+1)
	if r := Analyze(big); r.Err == "" || r.Overall() != Unknown {
		t.Fatal("oversized script analysed")
	}
	for v, s := range map[Verdict]string{Guarded: "guarded", Acquire: "acquire", Blind: "blind", Unknown: "unknown", 9: "Verdict(9)"} {
		if v.String() != s {
			t.Errorf("%d: %s", v, v)
		}
	}
	deep := "return " + strings.Repeat("not ", 500) + "1"
	if r := Analyze(deep); r.Err == "" {
		t.Fatal("deep nesting analysed")
	}
	long := strings.Repeat("local x = redis.call('GET', KEYS[1])\n", 30000)
	if r := Analyze(long); r.Err == "" {
		t.Fatal("step budget not enforced")
	}
}

// Issue 18: what the analysis cannot follow may change any key at all,
// received or not (Report.Anywhere), so that the proxy judges it against
// every rule; compares that always hold are no guard; flushes are listed.
func TestSoundness(t *testing.T) {
	for _, body := range []string{
		"return redis.call('DEL', string.format('%x:lock', ARGV[1]))",
		"return redis.call('DEL', table.concat({ARGV[1], ':lock'}))",
		"return redis.call('DEL', table.concat({'res', ':lock'}))",
		"return redis.call('DEL', string.lower(ARGV[1]))",
		"return redis.call('DEL', 'res' .. string.rep(':lock', 1))",
		"return redis.call('DEL', string.char(114, 101, 115))",
		"return redis.call('DEL', ARGV[1]:lower())",
		"return redis.call('DEL', cjson.decode(ARGV[1]).k)",
		"return redis.call('DEL', 1 + 1)",
		"KEYS[1] = ARGV[1]\nreturn redis.call('DEL', KEYS[1])",
		"return loadstring('return 1')()",
		"return getfenv(0).redis.call('DEL', ARGV[1])",
		"return rawget(_G, 'redis').call('DEL', ARGV[1])",
		"local t = setmetatable({}, {__add = function(a, b) return redis.call('DEL', b) end})\nreturn t + ARGV[1]",
		"local k = 'ca'\nlocal f = redis[k .. ARGV[2]]\nreturn f('DEL', ARGV[1])",
		"return string.gsub(ARGV[1], '(%S+) (%S+)', redis.call)",
		"return select(1, redis.call)('DEL', ARGV[1])",
		"for k, f in pairs(redis) do if k == 'call' then f('DEL', ARGV[1]) end end",
		"local n = 0x1p4\nreturn 1",
		strings.Repeat(" ", MaxBody+1),
	} {
		if Analyze(body).Anywhere() == nil {
			t.Errorf("no anywhere site: %.80q\n%s", body, dumpSites(Analyze(body)))
		}
	}
	for _, body := range []string{
		"return redis.call('DEL', KEYS[1])",
		"return redis.call('DEL', ARGV[1])",
		"return redis.call('DEL', KEYS[1] .. ':x', ARGV[1] .. 'y')",
		"local id = redis.call('LPOP', KEYS[1])\nreturn redis.call('DEL', ARGV[1] .. id)", // stored data: not followed
		readLua(t, "echomq_claim.lua"),
		readLua(t, "echomq_complete.lua"),
	} {
		if s := Analyze(body).Anywhere(); s != nil {
			t.Errorf("anywhere site %+v: %q", s, body)
		}
	}
	for _, tc := range []struct {
		body string
		v    Verdict
	}{
		{"local v = redis.call('GET', KEYS[1])\nif v == (ARGV[1] or v) then return redis.call('DEL', KEYS[1]) end", Blind},
		{"if redis.call('GET', KEYS[1]) == (ARGV[1] or 'x') then return redis.call('DEL', KEYS[1]) end", Guarded},
		{"local v = redis.call('GET', KEYS[1])\nif string.sub(v, 1, 0) == string.sub(ARGV[1], 1, 0) then return redis.call('DEL', KEYS[1]) end", Blind},
		{"if redis.call('GETRANGE', KEYS[1], 3, 1) == string.sub(ARGV[1], 3, 1) then return redis.call('DEL', KEYS[1]) end", Blind},
		{"if redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1) == string.sub(ARGV[1], 1, tonumber(ARGV[2])) then return redis.call('DEL', KEYS[1]) end", Guarded},
		{"local k = KEYS[tonumber(ARGV[1])]\nif redis.call('GET', k) == ARGV[2] then return redis.call('DEL', k) end", Guarded},
	} {
		if v, _ := Analyze(tc.body).Key(1); v != tc.v {
			t.Errorf("%v, want %v: %q\n%s", v, tc.v, tc.body, dumpSites(Analyze(tc.body)))
		}
	}
	for body, n := range map[string]int{
		"return redis.call('FLUSHDB')":           1,
		"return redis.call('flushall', 'ASYNC')": 1,
		"return redis.call('SWAPDB', 0, 1)":      1,
		"return redis.call(ARGV[1])":             1,
		"return redis.call('DEL', KEYS[1])":      0,
		"return redis.call('SET', KEYS[1], 'x')": 0,
		"return redis.call(unpack(ARGV))":        1,
		"#!lua name=l\nredis.register_function('f', function() return redis.call('FLUSHDB') end)": -1,
	} {
		if n < 0 {
			if got := len(AnalyzeLibrary(body).Functions["f"].Flushes); got != 1 {
				t.Errorf("library: %d flushes", got)
			}
			continue
		}
		if got := len(Analyze(body).Flushes); got != n {
			t.Errorf("%d flushes, want %d: %q", got, n, body)
		}
	}
}

// string.format of %s pieces builds a name the proxy rebuilds, as ..
// does: judged against the rules with the actual arguments, not as a key
// anywhere.
func TestFormatNames(t *testing.T) {
	r := Analyze("return redis.call('DEL', string.format('%s:lock', ARGV[1]))")
	if r.Anywhere() != nil || !r.Named() || len(r.Sites) != 1 || r.Sites[0].Target.String() != `ARGV[1] .. ":lock"` {
		t.Fatalf("%s", dumpSites(r))
	}
	n := r.Sites[0].Target.Names(nil, [][]byte{[]byte("res")}, nil)
	if len(n) != 1 || string(n[0]) != "res:lock" {
		t.Fatalf("%q", n)
	}
	for _, body := range []string{
		"return redis.call('DEL', string.format('%5s:lock', ARGV[1]))",
		"return redis.call('DEL', string.format(ARGV[2], ARGV[1]))",
		"return redis.call('DEL', string.format('%s:%s', ARGV[1]))",
		"return redis.call('DEL', string.format('%d:lock', ARGV[1]))",
	} {
		if Analyze(body).Anywhere() == nil {
			t.Errorf("%q: not anywhere\n%s", body, dumpSites(Analyze(body)))
		}
	}
}
