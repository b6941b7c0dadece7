package rewrite_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Every slot's index is in that slot, named with a tag of at most 4
// characters; a lock's index is its records' slot's (in a cluster: a name
// that cannot be wrapped in a tag has its records in another slot than its
// own) or the one of the database; each is one of lockproxy's own keys.
func TestIndexKeys(t *testing.T) {
	for slot := range uint16(cluster.SlotCount) {
		k := rewrite.SlotIndexKey(slot)
		if got := cluster.Slot([]byte(k)); got != slot {
			t.Fatalf("slot %d's index %q is in slot %d", slot, k, got)
		}
		if tag := k[1:strings.IndexByte(k, '}')]; len(tag) > 4 || !strings.HasSuffix(k, ":lockproxy:index") {
			t.Fatalf("slot %d's index %q", slot, k)
		}
	}
	for _, lock := range []string{"resource:lock", "{user:1}:lock", "a}b:lock", ""} {
		in := string(rewrite.IndexKey([]byte(lock), true))
		if cluster.Slot([]byte(in)) != cluster.Slot(rewrite.RecordsKey([]byte(lock))) {
			t.Errorf("lock %q: index %q is not in its records' slot", lock, in)
		}
		if got := string(rewrite.IndexKey([]byte(lock), false)); got != rewrite.StandaloneIndexKey {
			t.Errorf("lock %q outside a cluster: index %q", lock, got)
		}
	}
	d := testDecider(t, plainConfig, "")
	for _, k := range []string{rewrite.StandaloneIndexKey, rewrite.SlotIndexKey(7)} {
		if !d.Protected([]byte(k)) {
			t.Errorf("%q is not one of lockproxy's own keys", k)
		}
	}
}
