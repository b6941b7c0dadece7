package proxy

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
			got := fromTable(tab)
			exists := func(n string) bool { return tab.LookupString(n) != nil }
			compareSets(t, "kind", exists, kindsOf(fallbackCommands.kinds), kindsOf(got.kinds))
			compareSets(t, "blocking", exists, boolsOf(fallbackCommands.blocks), boolsOf(got.blocks))
			compareSets(t, "container", exists, boolsOf(fallbackCommands.containers), boolsOf(got.containers))
			// What the flags give on their own, before byName and
			// blocksUnflagged: the subscribe family and the blockers.
			for _, n := range fallbackSubscribe {
				if c := tab.LookupString(n); c == nil || !c.Flags.Has(keyspec.Pubsub|keyspec.Noscript) {
					t.Errorf("%s: %s is not flagged pubsub+noscript", bin, n)
				}
			}
			for _, n := range []string{"publish", "spublish", "pubsub"} {
				if c := tab.LookupString(n); c == nil || c.Flags.Has(keyspec.Noscript) || got.kind([]byte(n)) != kForward {
					t.Errorf("%s: %s would not be forwarded", bin, n)
				}
			}
		})
	}
}

func kindsOf(m map[string]kind) map[string]string {
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
	c := fromTable(tab)
	if k := fallbackCommands.kind([]byte("BNEWPOP")); k != kForward {
		t.Fatalf("fallback kind of BNEWPOP = %d", k)
	}
	if k := c.kind([]byte("BNEWPOP")); k != kDedicated {
		t.Errorf("kind of BNEWPOP = %d, want kDedicated", k)
	}
	if w, ok := c.blockingWait([][]byte{[]byte("bnewpop"), []byte("k"), []byte("1")}); !ok || w >= 0 {
		t.Errorf("blockingWait(BNEWPOP) = %v, %v; want forever", w, ok)
	}
	if k := c.kind([]byte("xread")); k != kXRead {
		t.Errorf("kind of XREAD = %d, want kXRead", k)
	}
	if _, ok := c.blockingWait([][]byte{[]byte("xread"), []byte("streams"), []byte("s"), []byte("0")}); ok {
		t.Error("XREAD without BLOCK blocks")
	}
	if k := c.kind([]byte("newsubscribe")); k != kStream {
		t.Errorf("kind of NEWSUBSCRIBE = %d, want kStream", k)
	}
	if k := c.kind([]byte("wait")); k != kForward {
		t.Errorf("WAIT, absent from the table, is %d", k)
	}
}

// TestFallbackTable: the command table before Valkey's is loaded, name by
// name, in any letter case: each name's kind and metrics family, without a
// server.
func TestFallbackTable(t *testing.T) {
	for _, c := range []struct {
		name string
		kind kind
		fam  family
	}{
		{"GET", kForward, famForward},
		{"set", kForward, famForward},
		{"PUBLISH", kForward, famForward},
		{"Multi", kDedicated, famDedicated},
		{"WATCH", kDedicated, famDedicated},
		{"READONLY", kDedicated, famDedicated},
		{"REPLCONF", kDedicated, famDedicated},
		{"bLpOp", kDedicated, famDedicated},
		{"WAIT", kDedicated, famDedicated},
		{"XREAD", kXRead, famDedicated},
		{"XREADGROUP", kXRead, famDedicated},
		{"SUBSCRIBE", kStream, famPubsub},
		{"sunsubscribe", kStream, famPubsub},
		{"MONITOR", kStream, famPubsub},
		{"PSYNC", kSync, famReplication},
		{"HELLO", kHello, famConnection},
		{"SELECT", kSelect, famConnection},
		{"CLIENT", kClient, famConnection},
		{"AUTH", kAuth, famConnection},
		{"QUIT", kQuit, famConnection},
		{"RESET", kReset, famConnection},
		{"LOCKPROXY", kAdmin, famAdmin},
		{"INFO", kInfo, famAdmin},
		{"FLUSHALL", kLong, famServer},
		{"DEBUG", kLong, famServer},
		{"SCRIPT", kServer, famServer},
		{"SHUTDOWN", kServer, famServer},
		{"NOSUCHCOMMAND", kForward, famForward},
		{"A-NAME-LONGER-THAN-ANY-COMMAND", kForward, famForward},
	} {
		k := fallbackCommands.kind([]byte(c.name))
		if k != c.kind || familyOf(k) != c.fam {
			t.Errorf("%s: kind %d family %s, want kind %d family %s", c.name, k, familyOf(k), c.kind, c.fam)
		}
		if want := c.kind == kForward || c.kind == kServer || c.kind == kLong; forwarded(k) != want {
			t.Errorf("%s: forwarded %v", c.name, forwarded(k))
		}
	}
	for _, n := range []string{"client", "config", "xgroup"} {
		if !fallbackCommands.containers[n] {
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
		w, ok := fallbackCommands.blockingWait(args)
		if ok != c.blocks || ok && w != c.wait {
			t.Errorf("%s: %v %v, want %v %v", c.cmd, w, ok, c.wait, c.blocks)
		}
	}
}

// TestFlagsOf: the families the proxy decides by name come from the one
// table, in any letter case; other names have none.
func TestFlagsOf(t *testing.T) {
	for name, want := range map[string]flag{
		"EVAL": fScriptCall, "evalsha_RO": fScriptCall, "Fcall_ro": fScriptCall,
		"cluster": fClusterFace, "ASKING": fClusterFace,
		"SPUBLISH": fShardChannel, "ssubscribe": fShardChannel,
		"del": fDelete | fSplitSum, "UNLINK": fDelete | fSplitSum, "Exists": fSplitSum, "mget": fSplitMGet, "MSET": fSplitMSet,
		"PING": fOneServer, "info": fOneServer,
		"GET": 0, "evalx": 0, "subscribe": 0, "a-name-longer-than-any-command": 0,
	} {
		if got := flagsOf([]byte(name)); got != want {
			t.Errorf("flagsOf(%q) = %b, want %b", name, got, want)
		}
	}
	if !isScriptCall([]byte("EvalSha")) || isScriptCall([]byte("SCRIPT")) {
		t.Error("isScriptCall disagrees with the table")
	}
}

// TestIdOf: each command the proxy gives a behaviour of its own is found in
// any letter case, and is a command valkey-server 8 has (a misspelt name
// would never match); other names, longer ones among them, are cOther.
func TestIdOf(t *testing.T) {
	tab := servertable.Load(t, "valkey-server")
	seen := map[cmdID]string{}
	for name, id := range byNameID {
		if id == cOther {
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
			if got := idOf([]byte(spelt)); got != id {
				t.Errorf("idOf(%q) = %d, want %d", spelt, got, id)
			}
		}
	}
	for _, name := range []string{"GET", "execx", "exe", "", "sunsubscribes", "a-name-longer-than-any-command"} {
		if got := idOf([]byte(name)); got != cOther {
			t.Errorf("idOf(%q) = %d, want cOther", name, got)
		}
	}
}
