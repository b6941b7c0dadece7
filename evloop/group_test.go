//go:build linux

package evloop

import (
	"log/slog"
	"testing"
)

// TestGroup: no loop reads an upstream connection before the first client
// starts the loops; clients and upstream connections go to the loops in
// turn; once closed, the group gives no loop.
func TestGroup(t *testing.T) {
	g := NewGroup(2, Config{Log: slog.New(slog.DiscardHandler)})
	if g.Upstream() != nil {
		t.Fatal("a loop for an upstream connection before any client")
	}
	a, b, c := g.Client(), g.Client(), g.Client()
	if a == nil || b == nil || a == b || c != a {
		t.Fatalf("clients went to %p, %p, %p: want two loops in turn", a, b, c)
	}
	if u, v := g.Upstream(), g.Upstream(); u != a || v != b {
		t.Fatalf("upstream connections went to %p, %p: want the loops in turn", u, v)
	}
	g.Wake() // no client: nothing to pump
	g.Close()
	if g.Client() != nil || g.Upstream() != nil {
		t.Fatal("a closed group gave a loop")
	}
}
