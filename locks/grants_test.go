package locks

import (
	"strconv"
	"sync"
	"testing"

	"github.com/lockproxy/lockproxy/rewrite"
)

// A grant found missing is lost only when it was given under an epoch
// older than the one minted under now; it is forgotten once checked, and
// a released grant is not checked at all.
func TestGrantsLostIfOlder(t *testing.T) {
	const e = rewrite.EpochShift
	var g Grants
	g.given("old", 3<<e|7)
	g.given("new", 5<<e|1)
	g.given("gone", 3<<e|9)
	g.forget("gone")
	for _, tc := range []struct {
		key   string
		epoch int64
		want  bool
	}{
		{"old", 5, true},
		{"old", 5, false}, // forgotten once checked
		{"new", 5, false},
		{"gone", 5, false},
		{"never", 5, false},
	} {
		if got := g.lostIfOlder(tc.key, tc.epoch); got != tc.want {
			t.Errorf("lostIfOlder(%q, %d) = %v, want %v", tc.key, tc.epoch, got, tc.want)
		}
	}
}

// A session remembers at most maxRemembered grants; a key it already
// remembers is still updated.
func TestGrantsBounded(t *testing.T) {
	var g Grants
	for i := range maxRemembered + 5 {
		g.given("k"+strconv.Itoa(i), 1)
	}
	g.given("k0", 2)
	if len(g.m) != maxRemembered || g.m["k0"] != 2 {
		t.Fatalf("%d grants remembered, k0 = %d; want %d and 2", len(g.m), g.m["k0"], maxRemembered)
	}
}

// Apply notes a session's grants: a NOTOWNER on a grant of an older
// epoch than the one this instance mints under counts as lost.
func TestApplyFindsLostGrant(t *testing.T) {
	h := &testHost{}
	k := newTestKeeper(h, &sync.WaitGroup{})
	c := &testClient{}
	k.Apply(c, []rewrite.Effect{{Kind: rewrite.Grant, Key: []byte("a"), Grant: 1<<rewrite.EpochShift | 4}}, []byte("+OK\r\n"))
	k.sawToken(2 << rewrite.EpochShift) // a grant after a failover
	k.Apply(c, []rewrite.Effect{{Kind: rewrite.Refused, Key: []byte("a"), Reason: "NOTOWNER not yours"}}, []byte("-NOTOWNER not yours\r\n"))
	if n := k.Lost.Load(); n != 1 {
		t.Fatalf("lost %d, want 1", n)
	}
	if e := k.CurrentEpoch(); e != 2 {
		t.Fatalf("current epoch %d, want 2", e)
	}
}
