package commands

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/servertable"
	"github.com/lockproxy/lockproxy/keyspec"
)

// TestFallbackAgrees: the fallback the proxy uses before Valkey's table is
// loaded says what the tables of valkey-server 8 and redis-server 7.0 say,
// name for name. A name the server does not have (WAITAOF on Redis 7.0) may
// be in the fallback only.
func TestFallbackAgrees(t *testing.T) {
	for _, bin := range []string{"valkey-server", "redis-server"} {
		t.Run(bin, func(t *testing.T) {
			tab := servertable.Load(t, bin)
			got := FromTable(tab)
			exists := func(n string) bool { return tab.LookupString(n) != nil }
			compareSets(t, "kind", exists, kindsOf(Fallback.kinds), kindsOf(got.kinds))
			compareSets(t, "blocking", exists, boolsOf(Fallback.blocks), boolsOf(got.blocks))
			compareSets(t, "container", exists, boolsOf(Fallback.containers), boolsOf(got.containers))
			// What the flags give on their own, before byName and
			// blocksUnflagged: the subscribe family and the blockers.
			for _, n := range fallbackSubscribe {
				if c := tab.LookupString(n); c == nil || !c.Flags.Has(keyspec.Pubsub|keyspec.Noscript) {
					t.Errorf("%s: %s is not flagged pubsub+noscript", bin, n)
				}
			}
			for _, n := range []string{"publish", "spublish", "pubsub"} {
				if c := tab.LookupString(n); c == nil || c.Flags.Has(keyspec.Noscript) || got.Kind([]byte(n)) != Forward {
					t.Errorf("%s: %s would not be forwarded", bin, n)
				}
			}
		})
	}
}

func kindsOf(m map[string]Kind) map[string]string {
	out := make(map[string]string, len(m))
	for n, k := range m {
		out[n] = string(rune('0' + k))
	}
	return out
}

func boolsOf(m map[string]bool) map[string]string {
	out := make(map[string]string, len(m))
	for n, b := range m {
		if b {
			out[n] = "yes"
		}
	}
	return out
}

func compareSets(t *testing.T, what string, exists func(string) bool, fallback, derived map[string]string) {
	t.Helper()
	var diffs []string
	for n, v := range fallback {
		if d, ok := derived[n]; ok && d != v || !ok && exists(n) {
			diffs = append(diffs, n+": fallback "+v+", table "+d)
		}
	}
	for n, d := range derived {
		if _, ok := fallback[n]; !ok {
			diffs = append(diffs, n+": fallback none, table "+d)
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Errorf("%s %s", what, d)
	}
}

// TestDerivedBlocking: a blocking command the fallback does not know (as a
// newer server's would be) is routed as one once the table says so: it
// moves the session to its own connection and waits without a deadline.
func TestDerivedBlocking(t *testing.T) {
	reply := []interface{}{
		[]interface{}{"bnewpop", int64(-3), []interface{}{"write", "blocking"}, int64(1), int64(-2), int64(1),
			[]interface{}{"@list", "@blocking"}, []interface{}{}, []interface{}{}, []interface{}{}},
		[]interface{}{"xread", int64(-4), []interface{}{"readonly", "blocking", "movablekeys"}, int64(0), int64(0), int64(0),
			[]interface{}{"@stream"}, []interface{}{}, []interface{}{}, []interface{}{}},
		[]interface{}{"newsubscribe", int64(-2), []interface{}{"pubsub", "noscript"}, int64(0), int64(0), int64(0),
			[]interface{}{"@pubsub"}, []interface{}{}, []interface{}{}, []interface{}{}},
	}
	tab, err := keyspec.FromCommandReply(reply)
	if err != nil {
		t.Fatal(err)
	}
	c := FromTable(tab)
	if k := Fallback.Kind([]byte("BNEWPOP")); k != Forward {
		t.Fatalf("fallback kind of BNEWPOP = %d", k)
	}
	if k := c.Kind([]byte("BNEWPOP")); k != Dedicated {
		t.Errorf("kind of BNEWPOP = %d, want Dedicated", k)
	}
	if w, ok := c.BlockingWait([][]byte{[]byte("bnewpop"), []byte("k"), []byte("1")}); !ok || w >= 0 {
		t.Errorf("BlockingWait(BNEWPOP) = %v, %v; want forever", w, ok)
	}
	if k := c.Kind([]byte("xread")); k != XRead {
		t.Errorf("kind of XREAD = %d, want kXRead", k)
	}
	if _, ok := c.BlockingWait([][]byte{[]byte("xread"), []byte("streams"), []byte("s"), []byte("0")}); ok {
		t.Error("XREAD without BLOCK blocks")
	}
	if k := c.Kind([]byte("newsubscribe")); k != Stream {
		t.Errorf("kind of NEWSUBSCRIBE = %d, want kStream", k)
	}
	if k := c.Kind([]byte("wait")); k != Forward {
		t.Errorf("WAIT, absent from the table, is %d", k)
	}
}

// TestFallbackTable: the command table before Valkey's is loaded, name by
// name, in any letter case: each name's kind and metrics family, without a
// server.
func TestFallbackTable(t *testing.T) {
	for _, c := range []struct {
		name string
		kind Kind
		fam  Family
	}{
		{"GET", Forward, FamForward},
		{"set", Forward, FamForward},
		{"PUBLISH", Forward, FamForward},
		{"Multi", Dedicated, FamDedicated},
		{"WATCH", Dedicated, FamDedicated},
		{"READONLY", Dedicated, FamDedicated},
		{"REPLCONF", Dedicated, FamDedicated},
		{"bLpOp", Dedicated, FamDedicated},
		{"WAIT", Dedicated, FamDedicated},
		{"XREAD", XRead, FamDedicated},
		{"XREADGROUP", XRead, FamDedicated},
		{"SUBSCRIBE", Stream, FamPubsub},
		{"sunsubscribe", Stream, FamPubsub},
		{"MONITOR", Stream, FamPubsub},
		{"PSYNC", Sync, FamReplication},
		{"HELLO", Hello, FamConnection},
		{"SELECT", Select, FamConnection},
		{"CLIENT", Client, FamConnection},
		{"AUTH", Auth, FamConnection},
		{"QUIT", Quit, FamConnection},
		{"RESET", Reset, FamConnection},
		{"LOCKPROXY", Admin, FamAdmin},
		{"INFO", Info, FamAdmin},
		{"FLUSHALL", Long, FamServer},
		{"DEBUG", Long, FamServer},
		{"SCRIPT", Server, FamServer},
		{"SHUTDOWN", Server, FamServer},
		{"NOSUCHCOMMAND", Forward, FamForward},
		{"A-NAME-LONGER-THAN-ANY-COMMAND", Forward, FamForward},
	} {
		k := Fallback.Kind([]byte(c.name))
		if k != c.kind || k.Family() != c.fam {
			t.Errorf("%s: kind %d family %s, want kind %d family %s", c.name, k, k.Family(), c.kind, c.fam)
		}
		if want := c.kind == Forward || c.kind == Server || c.kind == Long; k.Forwarded() != want {
			t.Errorf("%s: forwarded %v", c.name, k.Forwarded())
		}
	}
	for name, want := range map[string]Kind{
		"TRACKING": Dedicated, "caching": Dedicated, "No-Touch": Dedicated, "import-source": Dedicated,
		"SETNAME": Forward, "list": Forward, "pause": Forward, "a-name-longer-than-any-command": Forward,
	} {
		if got := ClientKind([]byte(name)); got != want {
			t.Errorf("ClientKind(%q) = %d, want %d", name, got, want)
		}
	}
	for _, n := range []string{"client", "config", "xgroup"} {
		if !Fallback.Containers()[n] {
			t.Errorf("%s is not a container", n)
		}
	}
}

// TestBlockingWait: how long a command asked Valkey to hold it, read from
// where each blocking command keeps its timeout (negative: forever; the
// wait of a command that does not block is not read).
func TestBlockingWait(t *testing.T) {
	for _, c := range []struct {
		cmd    string
		wait   time.Duration
		blocks bool
	}{
		{"BLPOP k 1.5", 1500 * time.Millisecond, true},
		{"brpoplpush a b 2", 2 * time.Second, true},
		{"BLPOP k 0", -1, true},
		{"BLPOP k soon", 0, true}, // Valkey refuses it: no extra wait
		{"BLMPOP 3 1 k LEFT", 3 * time.Second, true},
		{"BZMPOP 0.5 1 z MIN", 500 * time.Millisecond, true},
		{"WAIT 1 250", 250 * time.Millisecond, true},
		{"WAITAOF 1 0 100", 100 * time.Millisecond, true},
		{"XREAD BLOCK 50 STREAMS s 0", 50 * time.Millisecond, true},
		{"XREAD COUNT 1 STREAMS s 0", 0, false},
		{"XREADGROUP GROUP g c BLOCK 0 STREAMS s >", -1, true},
		{"SAVE", -1, true},
		{"FLUSHALL", -1, true},
		{"FLUSHDB SYNC", -1, true},
		{"FLUSHALL ASYNC", 0, false},
		{"DEBUG SLEEP 2", 2 * time.Second, true},
		{"DEBUG RELOAD", -1, true},
		{"DEBUG OBJECT k", 0, false},
		{"GET k", 0, false},
	} {
		var args [][]byte
		for _, a := range strings.Fields(c.cmd) {
			args = append(args, []byte(a))
		}
		w, ok := Fallback.BlockingWait(args)
		if ok != c.blocks || ok && w != c.wait {
			t.Errorf("%s: %v %v, want %v %v", c.cmd, w, ok, c.wait, c.blocks)
		}
	}
}

// TestFlagsOf: the families the proxy decides by name come from the one
// table, in any letter case; other names have none.
func TestFlagsOf(t *testing.T) {
	for name, want := range map[string]Flag{
		"EVAL": ScriptCall, "evalsha_RO": ScriptCall, "Fcall_ro": ScriptCall,
		"cluster": ClusterFace, "ASKING": ClusterFace,
		"SPUBLISH": ShardChannel, "ssubscribe": ShardChannel,
		"del": Delete | SplitSum, "UNLINK": Delete | SplitSum, "Exists": SplitSum, "mget": SplitMGet, "MSET": SplitMSet,
		"PING": OneServer, "info": OneServer,
		"EvalSha": ScriptCall, "SCRIPT": 0,
		"GET": 0, "evalx": 0, "subscribe": 0, "a-name-longer-than-any-command": 0,
	} {
		if got := FlagsOf([]byte(name)); got != want {
			t.Errorf("FlagsOf(%q) = %b, want %b", name, got, want)
		}
	}
}

// TestIdOf: each command the proxy gives a behaviour of its own is found in
// any letter case, and is a command valkey-server 8 has (a misspelt name
// would never match); other names, longer ones among them, are IDOther.
func TestIdOf(t *testing.T) {
	tab := servertable.Load(t, "valkey-server")
	seen := map[ID]string{}
	for name, id := range byNameID {
		if id == IDOther {
			t.Errorf("%s has no id", name)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share id %d", name, other, id)
		}
		seen[id] = name
		if tab.LookupString(name) == nil {
			t.Errorf("%s is not a command of valkey-server", name)
		}
		for _, spelt := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			if got := IDOf([]byte(spelt)); got != id {
				t.Errorf("IDOf(%q) = %d, want %d", spelt, got, id)
			}
		}
	}
	for _, name := range []string{"GET", "execx", "exe", "", "sunsubscribes", "a-name-longer-than-any-command"} {
		if got := IDOf([]byte(name)); got != IDOther {
			t.Errorf("IDOf(%q) = %d, want IDOther", name, got)
		}
	}
}

// TestSubOf: each subcommand the proxy gives a behaviour of its own is
// found in any letter case and is a subcommand valkey-server 8 has, under
// the same name; other commands, and a container alone, are SubOther.
func TestSubOf(t *testing.T) {
	tab := servertable.Load(t, "valkey-server")
	seen := map[Sub]string{}
	for name, sub := range bySubName {
		if sub == SubOther {
			t.Errorf("%s has no Sub", name)
		}
		if other, dup := seen[sub]; dup {
			t.Errorf("%s and %s share Sub %d", name, other, sub)
		}
		seen[sub] = name
		if tab.LookupString(name) == nil {
			t.Errorf("%s is not a subcommand of valkey-server", name)
		}
		container, word, _ := strings.Cut(name, "|")
		for _, args := range [][]string{{container, word}, {strings.ToUpper(container), strings.ToUpper(word), "x"}} {
			if got := SubOf([][]byte{[]byte(args[0]), []byte(args[1])}); got != sub {
				t.Errorf("SubOf(%q) = %d, want %d", args, got, sub)
			}
		}
	}
	for _, args := range [][]string{{"SCRIPT"}, {"GET", "kill"}, {"script", "killx"}, {"client", "a-name-longer-than-any-subcommand"}, {"a-name-longer-than-any-command", "kill"}} {
		var a [][]byte
		for _, s := range args {
			a = append(a, []byte(s))
		}
		if got := SubOf(a); got != SubOther {
			t.Errorf("SubOf(%q) = %d, want SubOther", args, got)
		}
	}
}
