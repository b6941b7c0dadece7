package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Issue 26, finding 7: a lock "a:lock" and a lock "{a:lock}" shared one
// counter and one records hash (the first is wrapped in braces to name
// them), so a stranger that took "{a:lock}" with the holder's value was
// taken for the holder of "a:lock" and could delete it. On main the
// stranger's DEL answered :1 and the lock was gone.
func TestBracedLockApart(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*a:lock*\"\n    release: rewrite\n"))
	holder, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", "a:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, stranger.do("SET", "{a:lock}", "v", "NX", "PX", "60000"), "+OK\r\n")
	mustContain(t, stranger.do("DEL", "a:lock"), "-NOTOWNER")
	eq(t, e.direct().Get(ctx, "a:lock").Val(), "v")
	// Each keeps its own lock.
	eq(t, holder.do("DEL", "a:lock"), ":1\r\n")
	eq(t, stranger.do("DEL", "{a:lock}"), ":1\r\n")
}

// The tokens of a lock that ends in '}' do not go back across the upgrade
// that renamed its counter: its first grant under the new name is seeded
// from the old one, and continues above it.
func TestBracedLockCounterSeeded(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*lock*\"\n    release: rewrite\n"))
	d := e.direct()
	// The counter as lockproxy before the fix named it, at token 34.
	d.Set(ctx, "{b:lock}:lockproxy:grants", "34", 0)
	c := dialRaw(t, e.addr)
	eq(t, c.do("SET", "{b:lock}", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, d.Get(ctx, "{b:lock}}:lockproxy:grants").Val(), "35")
}

// Distinct names, in the lock's slot, for keys that used to share them.
func TestLockproxyKeysDistinct(t *testing.T) {
	keys := []string{"a:lock", "{a:lock}", "{a:lock}}", "a:lock}", "{a}b", "{a}b}", "x{y}", "", "}"}
	seen := map[string]string{}
	for _, k := range keys {
		for _, n := range []string{string(rewrite.CounterKey([]byte(k))), string(rewrite.RecordsKey([]byte(k)))} {
			if o, ok := seen[n]; ok {
				t.Fatalf("%q and %q share %q", o, k, n)
			}
			seen[n] = k
			// A key with a '}' and no tag, or empty, cannot be kept in its
			// slot (policy refuses rules whose keys would be so in a cluster).
			slotted := k != "" && (!strings.Contains(k, "}") || strings.Contains(k, "{"))
			if slotted && cluster.Slot([]byte(n)) != cluster.Slot([]byte(k)) {
				t.Fatalf("%q: %q is in another slot", k, n)
			}
		}
	}
}
