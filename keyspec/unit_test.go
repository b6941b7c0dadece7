package keyspec

import (
	"reflect"
	"strings"
	"testing"
)

// The tests in this file feed hand-built COMMAND replies to the table, to
// pin down the edge cases of the spec walk (negative startfrom, limits,
// keynum parsing, malformed specs) that the real servers' tables exercise
// only partly. server_test.go checks the same code against real servers.

func ifaces(ss ...string) []interface{} {
	out := make([]interface{}, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func bsIndex(i int) []interface{} {
	return []interface{}{"type", "index", "spec", []interface{}{"index", int64(i)}}
}

func bsKeyword(kw string, from int) []interface{} {
	return []interface{}{"type", "keyword", "spec", []interface{}{"keyword", kw, "startfrom", int64(from)}}
}

func bsUnknown() []interface{} { return []interface{}{"type", "unknown", "spec", []interface{}{}} }

func fkRange(last, step, limit int) []interface{} {
	return []interface{}{"type", "range", "spec", []interface{}{"lastkey", int64(last), "keystep", int64(step), "limit", int64(limit)}}
}

func fkKeynum(idx, first, step int) []interface{} {
	return []interface{}{"type", "keynum", "spec", []interface{}{"keynumidx", int64(idx), "firstkey", int64(first), "keystep", int64(step)}}
}

func spec(flags string, bs, fk []interface{}) []interface{} {
	return []interface{}{"flags", ifaces(strings.Fields(flags)...), "begin_search", bs, "find_keys", fk}
}

// entry builds a RESP2-shaped COMMAND entry.
func entry(name string, arity int, flags, cats string, specs ...[]interface{}) []interface{} {
	ss := make([]interface{}, len(specs))
	for i, s := range specs {
		ss[i] = s
	}
	return []interface{}{name, int64(arity), ifaces(strings.Fields(flags)...), int64(0), int64(0), int64(0),
		ifaces(strings.Fields(cats)...), []interface{}{}, ss, []interface{}{}}
}

func withSubs(e []interface{}, subs ...[]interface{}) []interface{} {
	ss := make([]interface{}, len(subs))
	for i, s := range subs {
		ss[i] = s
	}
	e[fieldSubcommands] = ss
	return e
}

func synthTable(t *testing.T) *Table {
	t.Helper()
	reply := []interface{}{
		entry("get", 2, "readonly fast", "@read @string", spec("RO access", bsIndex(1), fkRange(0, 1, 0))),
		entry("del", -2, "write", "@keyspace @write", spec("RM delete", bsIndex(1), fkRange(-1, 1, 0))),
		entry("mset", -3, "write denyoom", "@write @string", spec("OW update", bsIndex(1), fkRange(-1, 2, 0))),
		entry("del2", -2, "write", "", spec("RW insert", bsIndex(1), fkRange(0, 1, 0)), spec("RO", bsIndex(2), fkRange(-1, 1, 0))),
		entry("blpop", -3, "write blocking", "@write", spec("RW access delete", bsIndex(1), fkRange(-2, 1, 0))),
		entry("expire", -3, "write fast", "@keyspace @write @fast", spec("RW update", bsIndex(1), fkRange(0, 1, 0))),
		entry("zadd", -4, "write", "@write @sortedset", spec("RW update", bsIndex(1), fkRange(0, 1, 0))),
		entry("getex", -2, "write fast", "@write @string", spec("RW access update", bsIndex(1), fkRange(0, 1, 0))),
		entry("getset", 3, "write fast", "@write @string", spec("RW access update", bsIndex(1), fkRange(0, 1, 0))),
		entry("set", -3, "write denyoom", "@write @string", spec("RW access update variable_flags", bsIndex(1), fkRange(0, 1, 0))),
		entry("xread", -4, "readonly blocking movablekeys", "@read", spec("RO access", bsKeyword("STREAMS", 1), fkRange(-1, 1, 2))),
		entry("lim3", -2, "readonly movablekeys", "", spec("RO", bsKeyword("K", 1), fkRange(-1, 1, 3))),
		entry("kwneg", -2, "write movablekeys", "", spec("RW access delete", bsKeyword("KEYS", -2), fkRange(-1, 1, 0))),
		entry("kwpos", -2, "write movablekeys", "", spec("OW update", bsKeyword("STORE", 2), fkRange(0, 1, 0))),
		entry("kwinc", -2, "write movablekeys", "", spec("RW access delete incomplete", bsKeyword("KEYS", -2), fkRange(-1, 1, 0))),
		entry("eval", -3, "noscript no_mandatory_keys movablekeys", "@scripting",
			spec("RW access update", bsIndex(2), fkKeynum(0, 1, 1))),
		entry("zunionstore", -4, "write denyoom movablekeys", "@write",
			spec("OW update", bsIndex(1), fkRange(0, 1, 0)),
			spec("RO access", bsIndex(2), fkKeynum(0, 1, 1))),
		entry("sort", -2, "write denyoom movablekeys", "@write",
			spec("RO access", bsIndex(1), fkRange(0, 1, 0)),
			spec("RO access", bsUnknown(), []interface{}{"type", "unknown", "spec", []interface{}{}})),
		entry("spublish", 3, "pubsub fast", "@pubsub", spec("not_key", bsIndex(1), fkRange(0, 1, 0))),
		entry("step0", -2, "write", "", spec("RW update", bsIndex(1), fkRange(-1, 0, 0))),
		entry("idx0", -1, "write", "", spec("RW update", bsIndex(0), fkRange(0, 1, 0))),
		entry("newtype", -2, "write movablekeys", "", spec("RW update", []interface{}{"type", "regex", "spec", []interface{}{}}, fkRange(0, 1, 0))),
		entry("modcmd", -2, "write module movablekeys", ""),
		entry("ping", -1, "fast", "@fast @connection"),
		entry("flushall", -1, "write", "@keyspace @write @dangerous"),
		withSubs(entry("object", -2, "", "@slow"),
			entry("object|encoding", 3, "readonly", "@keyspace @read", spec("RO", bsIndex(2), fkRange(0, 1, 0))),
			entry("object|help", 2, "loading stale", "@keyspace")),
		withSubs(entry("client", -2, "", "@slow"),
			entry("client|kill", -3, "admin noscript", "@admin @connection"),
			entry("client|tracking", -3, "noscript", "@connection")),
	}
	// A legacy entry: Redis 6 shape, 7 fields, no key specs, key at 1.
	reply = append(reply, []interface{}{"legacy", int64(-2), ifaces("write"), int64(1), int64(1), int64(1), ifaces("@write")})
	reply = append(reply, nil) // COMMAND INFO's answer for an unknown name
	tab, err := FromCommandReply(reply)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

func idxs(keys []Key) []int {
	out := []int{}
	for _, k := range keys {
		out = append(out, k.Index)
	}
	return out
}

func TestKeysSynthetic(t *testing.T) {
	tab := synthTable(t)
	cases := []struct {
		args string
		st   Status
		idx  []int
	}{
		{"GET k", OK, []int{1}},
		{"gEt k", OK, []int{1}},
		{"GET", ArityError, []int{}},
		{"GET a b", ArityError, []int{}},
		{"DEL a b c", OK, []int{1, 2, 3}},
		{"MSET a 1 b 2", OK, []int{1, 3}},
		{"MSET a 1 b", OK, []int{1, 3}}, // the server's spec walk says the same; MSET itself then fails
		{"BLPOP a b 0", OK, []int{1, 2}},
		// XREAD: limit 2 takes the first half of what follows STREAMS.
		{"XREAD STREAMS s1 s2 0 0", OK, []int{2, 3}},
		{"XREAD COUNT 1 streams s1 0", OK, []int{4}},
		{"XREAD STREAMS s1 s2 0", OK, []int{2}},             // (5-2)/2-1 = 0 → one key; XREAD rejects it when run
		{"XREAD COUNT 1 STREAMS", OK, []int{}},              // keyword as the last argument is never matched
		{"XREAD COUNT 1 STREAMS s", OK, []int{}},            // (5-4)/2-1 = -1: an empty range
		{"XREAD STREAMS a b c d e f g", OK, []int{2, 3, 4}}, // (9-2)/2-1 = 2
		{"LIM3 K a", OK, []int{}},                           // (3-2)/3-1 = -1: empty
		{"DEL2 a", OK, []int{1}},                            // the optional second list is empty
		{"DEL2 a b c", OK, []int{1, 2, 3}},
		{"XREAD STREAMS STREAMS s 0", OK, []int{2}}, // first match wins: key "STREAMS"
		{"LIM3 K a b c d e f", OK, []int{2, 3}},
		{"LIM3 K a b c d e f g", OK, []int{2, 3}}, // (8-2)/3-1 = 1 → 2 keys
		// Negative startfrom searches backwards from len-2, never args[1].
		{"KWNEG KEYS x KEYS a b", OK, []int{4, 5}},
		{"KWNEG KEYS a", OK, []int{}},
		{"KWNEG x KEYS a", OK, []int{3}},
		{"KWNEG x y KEYS", OK, []int{}}, // starts at len-2 = "y"
		{"KWNEG keys", OK, []int{}},
		// Positive startfrom: search from index 2 up to len-2.
		{"KWPOS STORE a STORE d", OK, []int{4}},
		{"KWPOS a b c STORE", OK, []int{}},
		{"KWPOS a", OK, []int{}}, // start 2 beyond the arguments
		{"KWINC a KEYS b", NeedsGetKeys, []int{3}},
		{"KWINC a b", OK, []int{}}, // the incomplete spec matched nothing, so the walk is complete
		// Keynum.
		{"EVAL s 2 k1 k2 a", OK, []int{3, 4}},
		{"EVAL s 0", OK, []int{}},
		{"EVAL s 0 a b", OK, []int{}},
		{"EVAL s 3 k1 k2", NeedsGetKeys, []int{}},
		{"EVAL s -1 a", NeedsGetKeys, []int{}},
		{"EVAL s 01 a", NeedsGetKeys, []int{}},
		{"EVAL s +1 a", NeedsGetKeys, []int{}},
		{"EVAL s 1x a", NeedsGetKeys, []int{}},
		{"EVAL s 4294967297 k", OK, []int{3}}, // (int)numkeys wraps to 1, as in the server
		{"ZUNIONSTORE d 2 a b", OK, []int{1, 3, 4}},
		{"ZUNIONSTORE d 0 a", OK, []int{1}},
		{"ZUNIONSTORE d x a", NeedsGetKeys, []int{1}},
		{"SORT k BY w STORE d", NeedsGetKeys, []int{1}},
		{"SPUBLISH ch msg", OK, []int{}},
		{"SET k v", VariableFlags, []int{1}},
		{"STEP0 a b", NeedsGetKeys, []int{}},
		{"IDX0", NeedsGetKeys, []int{}},
		{"NEWTYPE a", NeedsGetKeys, []int{}},
		{"MODCMD a", NeedsGetKeys, []int{}},
		{"LEGACY a", NeedsGetKeys, []int{}},
		{"PING", OK, []int{}},
		{"FLUSHALL", OK, []int{}},
		{"OBJECT ENCODING k", OK, []int{2}},
		{"object Encoding k", OK, []int{2}},
		{"OBJECT", ArityError, []int{}},
		{"OBJECT ENCODING", ArityError, []int{}},
		{"OBJECT NOPE k", UnknownCommand, []int{}},
		{"CLIENT KILL ID 1", OK, []int{}},
		{"CLIENT TRACKING on", OK, []int{}},
		{"client|kill ID 1", UnknownCommand, []int{}}, // the server does not resolve this spelling either
		{"NOPE a", UnknownCommand, []int{}},
		{"", UnknownCommand, []int{}},
	}
	for _, tc := range cases {
		keys, st := tab.Keys(argv(tc.args), nil)
		if st != tc.st || !reflect.DeepEqual(idxs(keys), tc.idx) {
			t.Errorf("%q: got %v %v, want %v %v", tc.args, st, idxs(keys), tc.st, tc.idx)
		}
	}
}

func TestKeysFlagsAndAppend(t *testing.T) {
	tab := synthTable(t)
	dst := make([]Key, 1, 8)
	dst[0] = Key{Index: 99}
	keys, st := tab.Keys(argv("ZUNIONSTORE d 2 a b"), dst)
	want := []Key{{99, 0}, {1, KeyOW | KeyUpdate}, {3, KeyRO | KeyAccess}, {4, KeyRO | KeyAccess}}
	if st != OK || !reflect.DeepEqual(keys, want) {
		t.Fatalf("got %v %v, want %v", keys, st, want)
	}
	if &keys[0] != &dst[0] {
		t.Fatal("Keys did not append into dst's array")
	}
	keys, st = tab.Keys(argv("SET k v"), nil)
	if st != VariableFlags || keys[0].Flags != KeyRW|KeyAccess|KeyUpdate|KeyVariableFlags {
		t.Fatalf("SET: %v %v", keys, st)
	}
}

func TestKeywordNULByte(t *testing.T) {
	// strcasecmp stops at NUL: "streams\x00junk" matches STREAMS.
	tab := synthTable(t)
	args := [][]byte{[]byte("XREAD"), []byte("streams\x00junk"), []byte("s"), []byte("0")}
	keys, st := tab.Keys(args, nil)
	if st != OK || !reflect.DeepEqual(idxs(keys), []int{2}) {
		t.Fatalf("got %v %v", st, idxs(keys))
	}
	if cstrEqualFold([]byte("stream"), "STREAMS") || !cstrEqualFold([]byte("sTrEaMs"), "STREAMS") {
		t.Fatal("cstrEqualFold")
	}
	if cstrEqualFold([]byte("\xd3treams"), "STREAMS") {
		t.Fatal("cstrEqualFold folds beyond ASCII")
	}
}

func TestLookup(t *testing.T) {
	tab := synthTable(t)
	for _, n := range []string{"get", "GET", "GeT"} {
		if c := tab.LookupString(n); c == nil || c.Name != "get" {
			t.Errorf("%q: %v", n, c)
		}
	}
	for _, n := range []string{"client|kill", "CLIENT|KILL", "Client|Tracking"} {
		c := tab.LookupString(n)
		if c == nil || c.Parent == nil || c.Parent.Name != "client" || !strings.EqualFold(c.Name, n) {
			t.Errorf("%q: %v", n, c)
		}
	}
	for _, n := range []string{"", "nope", "client|", "client|nope", "get|x", "|kill", strings.Repeat("g", 200)} {
		if c := tab.LookupString(n); c != nil {
			t.Errorf("%q: found %s", n, c.Name)
		}
	}
	if c := tab.Command(argv("CLIENT")); c == nil || c.Name != "client" {
		t.Errorf("CLIENT alone: %v", c)
	}
	if c := tab.Command(argv("GET k")); c == nil || c.Name != "get" {
		t.Errorf("GET k: %v", c)
	}
	if sub := tab.LookupString("object").Subcommands["encoding"]; sub == nil || sub.SubcommandName() != "encoding" {
		t.Errorf("object subcommands: %v", tab.LookupString("object").Subcommands)
	}
}

func TestLongNames(t *testing.T) {
	long := strings.Repeat("x", nameBufLen+10)
	tab, err := FromCommandReply([]interface{}{entry(long, 2, "readonly", "", spec("RO", bsIndex(1), fkRange(0, 1, 0)))})
	if err != nil {
		t.Fatal(err)
	}
	if c := tab.LookupString(strings.ToUpper(long)); c == nil {
		t.Fatal("long name not found")
	}
	keys, st := tab.Keys([][]byte{[]byte(strings.ToUpper(long)), []byte("k")}, nil)
	if st != OK || len(keys) != 1 {
		t.Fatalf("%v %v", keys, st)
	}
}

func TestDerivedCommandFacts(t *testing.T) {
	tab := synthTable(t)
	for name, want := range map[string]bool{"expire": true, "getex": true, "zadd": false, "getset": false, "set": false, "del": false} {
		if got := tab.LookupString(name).ExpiryOnly(); got != want {
			t.Errorf("%s ExpiryOnly = %v", name, got)
		}
	}
	for name, want := range map[string]bool{"flushall": true, "ping": false, "del": false, "modcmd": false, "legacy": false} {
		if got := tab.LookupString(name).KeylessWrite(); got != want {
			t.Errorf("%s KeylessWrite = %v", name, got)
		}
	}
	c := tab.LookupString("xread")
	if !c.Flags.Has(Readonly|Blocking|MovableKeys) || c.Flags&Write != 0 {
		t.Errorf("xread flags %v", c.Flags)
	}
	if !c.InCategory("@read") || !c.InCategory("READ") || c.InCategory("write") {
		t.Errorf("xread categories %v", c.ACLCategories)
	}
}

func TestKeyFlagHelpers(t *testing.T) {
	// One row per shape found in Valkey 8's and Redis 7's tables, plus the
	// degenerate ones. D=Deletes O=Overwrites W=Writes R=ReadOnly.
	cases := []struct {
		flags      string
		d, o, w, r bool
		example    string
	}{
		{"RM delete", true, false, true, false, "DEL, UNLINK"},
		{"RW access delete", true, false, true, false, "GETDEL, LPOP, RENAME source"},
		{"RW delete", true, false, true, false, "HDEL, SREM"},
		{"OW update", false, true, true, false, "MSET, RESTORE, RENAME dest"},
		{"OW insert", false, true, true, false, "SETNX, MSETNX"},
		{"RW update", false, true, true, false, "EXPIRE, HSET, ZADD"},
		{"RW access update", false, true, true, false, "GETSET, INCR, MOVE, EVAL"},
		{"RW access update variable_flags", false, true, true, false, "SET, BITFIELD"},
		{"RW insert", false, true, true, false, "APPEND, LPUSH, SADD"},
		{"RW access insert", false, true, true, false, "PFMERGE dest"},
		{"RW access", false, false, true, false, "PFCOUNT"},
		{"RW", false, true, true, false, "(no logical op: worst assumed)"},
		{"RO", false, false, false, true, "EXISTS, OBJECT ENCODING"},
		{"RO access", false, false, false, true, "GET, COPY source"},
		{"", true, true, true, false, "(no flags: worst assumed)"},
		{"access", true, true, true, false, "(no access type: worst assumed)"},
		{"not_key", false, false, false, false, "SPUBLISH channel"},
	}
	for _, tc := range cases {
		var f KeyFlags
		for _, s := range strings.Fields(tc.flags) {
			f |= ParseKeyFlag(s)
		}
		if f.Deletes() != tc.d || f.Overwrites() != tc.o || f.Writes() != tc.w || f.ReadOnly() != tc.r {
			t.Errorf("%q (%s): D=%v O=%v W=%v R=%v, want %v %v %v %v", tc.flags, tc.example,
				f.Deletes(), f.Overwrites(), f.Writes(), f.ReadOnly(), tc.d, tc.o, tc.w, tc.r)
		}
		if (f.Deletes() || f.Overwrites()) && !f.Writes() {
			t.Errorf("%q: Deletes/Overwrites without Writes", tc.flags)
		}
	}
	if got := (KeyRW | KeyAccess | KeyVariableFlags).String(); got != "RW access variable_flags" {
		t.Errorf("String = %q", got)
	}
	if got := (Write | Fast | MovableKeys).String(); got != "write fast movablekeys" {
		t.Errorf("String = %q", got)
	}
	if ParseFlag("BLOCKING") != Blocking || ParseFlag("future_flag") != 0 || ParseKeyFlag("Rm") != KeyRM {
		t.Error("flag parsing")
	}
}

// TestRESP3Shapes feeds the same entries in the RESP3 shapes go-redis
// produces (maps for specs, sets as arrays) and in map-as-set shape, and
// expects the same table.
func TestRESP3Shapes(t *testing.T) {
	toMap := func(kv []interface{}) map[interface{}]interface{} {
		m := map[interface{}]interface{}{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	var conv func(s []interface{}) map[interface{}]interface{}
	conv = func(s []interface{}) map[interface{}]interface{} {
		m := toMap(s)
		for k, v := range m {
			if k == "begin_search" || k == "find_keys" {
				inner := toMap(v.([]interface{}))
				inner["spec"] = toMap(inner["spec"].([]interface{}))
				m[k] = inner
			}
		}
		return m
	}
	r2 := entry("xread", -4, "readonly blocking movablekeys", "@read",
		spec("RO access", bsKeyword("STREAMS", 1), fkRange(-1, 1, 2)))
	r3 := entry("xread", -4, "readonly blocking movablekeys", "@read")
	r3[fieldFlags] = map[interface{}]interface{}{"readonly": true, "blocking": true, "movablekeys": true}
	r3[fieldKeySpecs] = []interface{}{conv(spec("RO access", bsKeyword("STREAMS", 1), fkRange(-1, 1, 2)))}
	t2, err := FromCommandReply([]interface{}{r2})
	if err != nil {
		t.Fatal(err)
	}
	t3, err := FromCommandReply([]interface{}{r3})
	if err != nil {
		t.Fatal(err)
	}
	c2, c3 := t2.LookupString("xread"), t3.LookupString("xread")
	if c2.Flags != c3.Flags || !reflect.DeepEqual(c2.KeySpecs, c3.KeySpecs) {
		t.Fatalf("RESP2 %+v\nRESP3 %+v", c2, c3)
	}
	want := KeySpec{Flags: KeyRO | KeyAccess,
		BeginSearch: BeginSearch{Type: BeginSearchKeyword, Keyword: "STREAMS", StartFrom: 1},
		FindKeys:    FindKeys{Type: FindKeysRange, LastKey: -1, Step: 1, Limit: 2}}
	if !reflect.DeepEqual(c2.KeySpecs, []KeySpec{want}) {
		t.Fatalf("spec %+v", c2.KeySpecs)
	}
}

func TestFromCommandReplyErrors(t *testing.T) {
	bad := map[string][]interface{}{
		"empty":        {},
		"only nil":     {nil},
		"not array":    {"get"},
		"short":        {[]interface{}{"get", int64(2), ifaces("readonly")}},
		"bad name":     {[]interface{}{int64(1), int64(2), ifaces(), int64(1), int64(1), int64(1)}},
		"bad arity":    {[]interface{}{"get", "two", ifaces(), int64(1), int64(1), int64(1)}},
		"bad flags":    {[]interface{}{"get", int64(2), "readonly", int64(1), int64(1), int64(1)}},
		"huge arity":   {[]interface{}{"get", int64(1 << 40), ifaces(), int64(1), int64(1), int64(1)}},
		"bad specs":    {[]interface{}{"get", int64(2), ifaces(), int64(1), int64(1), int64(1), ifaces(), ifaces(), "x"}},
		"odd spec":     {[]interface{}{"get", int64(2), ifaces(), int64(1), int64(1), int64(1), ifaces(), ifaces(), []interface{}{ifaces("flags")}}},
		"bad sub":      {[]interface{}{"get", int64(2), ifaces(), int64(1), int64(1), int64(1), ifaces(), ifaces(), []interface{}{}, []interface{}{"x"}}},
		"bad sub list": {[]interface{}{"get", int64(2), ifaces(), int64(1), int64(1), int64(1), ifaces(), ifaces(), []interface{}{}, "x"}},
	}
	for name, reply := range bad {
		if tab, err := FromCommandReply(reply); err == nil {
			t.Errorf("%s: accepted: %+v", name, tab)
		}
	}
	// A spec part with missing fields loads as Unknown, so Keys defers to
	// the server instead of guessing.
	tab, err := FromCommandReply([]interface{}{
		entry("odd", -2, "write", "", []interface{}{"flags", ifaces("RW"), "begin_search", []interface{}{"type", "index", "spec", []interface{}{}}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, st := tab.Keys(argv("ODD a"), nil); st != NeedsGetKeys {
		t.Errorf("odd spec: %v", st)
	}
}

func TestGetKeysAndFlagsParse(t *testing.T) {
	got, err := GetKeysAndFlags([]interface{}{
		[]interface{}{"k1", ifaces("RW", "access", "update")},
		[]interface{}{[]byte("k2"), ifaces("OW", "update", "future")},
		[]interface{}{"k3", map[interface{}]interface{}{"RM": true, "delete": true}},
		[]interface{}{"k4", []interface{}{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []KeyWithFlags{
		{"k1", KeyRW | KeyAccess | KeyUpdate},
		{"k2", KeyOW | KeyUpdate},
		{"k3", KeyRM | KeyDelete},
		{"k4", 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	if !got[3].Flags.Writes() {
		t.Error("a key without flags must count as a write")
	}
	for _, bad := range [][]interface{}{
		{"k1"},
		{[]interface{}{"k1"}},
		{[]interface{}{int64(1), ifaces()}},
		{[]interface{}{"k1", "RW"}},
	} {
		if _, err := GetKeysAndFlags(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

func TestStatusString(t *testing.T) {
	for s, want := range map[Status]string{OK: "OK", NeedsGetKeys: "NeedsGetKeys", VariableFlags: "VariableFlags", 99: "Status(?)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
}

// TestConcurrentKeys: the table is shared by every connection of the
// proxy; the race detector checks that lookups and walks only read it.
func TestConcurrentKeys(t *testing.T) {
	tab := synthTable(t)
	vectors := [][][]byte{argv("DEL a b"), argv("XREAD STREAMS s 0"), argv("client kill id 1"), argv("EVAL s 1 k")}
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			dst := make([]Key, 0, 4)
			for i := 0; i < 2000; i++ {
				dst, _ = tab.Keys(vectors[i%len(vectors)], dst[:0])
				_ = tab.LookupString("OBJECT|ENCODING")
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}
