package proxy

import (
	"sort"
	"testing"

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
