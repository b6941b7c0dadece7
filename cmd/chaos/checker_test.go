package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The checker against hand-made histories: each violation is found where
// it is, and nothing is found in a clean history — so a 0 from a real run
// means something.

const ms = int64(time.Millisecond)

func acq(w, g int, lock string, at int64) Op {
	return Op{W: w, G: g, Kind: kindAcquire, Lock: lock, Arg: "v", Reply: "+OK\r\n", S: at - ms, R: at, Lease: 100}
}

func del(w, g int, lock string, at int64, reply string) Op {
	return Op{W: w, G: g, Kind: kindRelease, Lock: lock, Reply: reply, S: at, R: at + ms}
}

func entries(es ...Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, formatEntry(e.Tok, e.W, e.G, e.Op, e.T))
	}
	return out
}

func TestCheckCleanHistory(t *testing.T) {
	base := time.Now().UnixNano()
	ops := []Op{
		acq(0, 0, "c0", base),
		{W: 0, G: 0, Kind: kindToken, Lock: "c0", Reply: ":1\r\n"},
		{W: 0, G: 0, Kind: kindWrite, Lock: "c0", Reply: ":1\r\n"},
		{W: 0, G: 0, Kind: kindEcho, Arg: "p", Want: "$1\r\np\r\n", Reply: "$1\r\np\r\n"},
		{W: 0, G: 0, Kind: kindSet, Reply: "+OK\r\n"},
		{W: 0, G: 0, Kind: kindGet, Want: "$1\r\np\r\n", Reply: "$1\r\np\r\n"},
		del(0, 0, "c0", base+50*ms, ":1\r\n"), // within the lease
		acq(1, 0, "c0", base+300*ms),
		{W: 1, G: 0, Kind: kindWrite, Lock: "c0", Reply: "-STALE lockproxy refused a write\r\n"},
		{W: 1, G: 0, Kind: kindEcho, Reply: "-UPSTREAM lockproxy lost its connection\r\n"},
		{W: 1, G: 0, Kind: kindEcho, Reply: replyCut + " read: EOF"},
		del(1, 0, "c0", base+900*ms, ":0\r\n"), // late, but deleted nothing
		del(1, 1, "c0", base+900*ms, "-NOTOWNER lockproxy refused DEL\r\n"),
		{W: 2, G: 0, Kind: kindStall, S: base, R: base + 300*ms},
	}
	res := map[string][]string{"c0": entries(
		Entry{1, 0, 0, "enter", 1}, Entry{1, 0, 0, "exit", 2},
		Entry{2, 1, 0, "enter", 3}, Entry{2, 1, 0, "exit", 4},
		Entry{2, 1, 0, "exit", 5},  // the same grant twice is no overlap
		Entry{3, 2, 0, "enter", 6}, // a later token is fine
	)}
	got := Check("proxy", ops, res)
	if got.Violations() != 0 {
		t.Fatalf("clean history: %d violations: %+v", got.Violations(), got)
	}
	if got.Grants != 2 || got.Releases != 1 || got.ReleasesNoop != 1 || got.ReleasesRefused != 1 ||
		got.WritesRefused != 1 || got.Cut != 1 || got.UpstreamErrors != 1 || got.Stalls != 1 || got.Writes != 6 {
		t.Fatalf("counts: %+v", got)
	}
}

func TestCheckSuccessorDeleted(t *testing.T) {
	base := time.Now().UnixNano()
	ops := []Op{
		acq(0, 0, "c0", base),
		del(0, 0, "c0", base+99*ms, ":1\r\n"), // within the lease: its own lock
		acq(0, 1, "c0", base+200*ms),
		del(0, 1, "c0", base+304*ms, ":1\r\n"), // lease 100 ms + 5 ms margin not yet past
		acq(0, 2, "c0", base+400*ms),
		del(0, 2, "c0", base+506*ms, ":1\r\n"), // past it: someone else's lock
	}
	got := Check("plain", ops, nil)
	if got.SuccessorDeleted != 1 {
		t.Fatalf("successor deletions %d, want 1: %v", got.SuccessorDeleted, got.Examples)
	}
}

func TestCheckStaleAndOverlap(t *testing.T) {
	res := map[string][]string{"c0": entries(
		Entry{5, 0, 0, "enter", 1},
		Entry{6, 1, 0, "enter", 2}, // B's grant
		Entry{5, 0, 0, "exit", 3},  // A again: stale (5 < 6) and an overlap (B inside A's span)
		Entry{6, 1, 0, "exit", 4},
	), "c1": entries(
		Entry{3, 0, 1, "enter", 1},
		Entry{2, 1, 1, "enter", 2}, // stale, no overlap: grant 2 alone
	)}
	got := Check("plain", nil, res)
	if got.StaleAccepted != 2 {
		t.Fatalf("stale %d, want 2: %v", got.StaleAccepted, got.Examples)
	}
	// In c0, B's entries (2..4) contain A's exit and A's (1..3) contain B's enter.
	if got.Overlaps != 2 {
		t.Fatalf("overlaps %d, want 2: %v", got.Overlaps, got.Examples)
	}
}

func TestCheckMisroutedAndLost(t *testing.T) {
	for _, tc := range []struct {
		op        Op
		misrouted bool
	}{
		{Op{Kind: kindEcho, Want: "$2\r\nme\r\n", Reply: "$5\r\nother\r\n"}, true},
		{Op{Kind: kindEcho, Want: "$2\r\nme\r\n", Reply: ":1\r\n"}, true},
		{Op{Kind: kindGet, Want: "$2\r\nme\r\n", Reply: "$-1\r\n"}, true},
		{Op{Kind: kindAcquire, Reply: ":3\r\n"}, true},
		{Op{Kind: kindAcquire, Reply: "-STALE refused\r\n"}, true}, // a write's error
		{Op{Kind: kindWrite, Reply: "+OK\r\n"}, true},
		{Op{Kind: kindRelease, Reply: "$1\r\nx\r\n"}, true},
		{Op{Kind: kindToken, Reply: "+PONG\r\n"}, true},
		{Op{Kind: kindSet, Reply: "$-1\r\n"}, true},
		{Op{Kind: kindAcquire, Reply: "_\r\n"}, false},
		{Op{Kind: kindToken, Reply: "$-1\r\n"}, false},
		{Op{Kind: kindWrite, Reply: "-UNFENCED refused\r\n"}, false},
		// A script's acquisition under durability or max_lease.
		{Op{Kind: kindAcquire, Reply: "-NOTDURABLE fewer than 1 replicas acknowledged\r\n"}, false},
		{Op{Kind: kindAcquire, Reply: "-LOCKDELAY lockproxy refused SET\r\n"}, false},
		{Op{Kind: kindAcquire, Reply: "-LEASE lockproxy refused SET\r\n"}, true},
	} {
		got := Check("proxy", []Op{tc.op}, nil)
		if (got.Misrouted == 1) != tc.misrouted {
			t.Errorf("%s %q: misrouted %d, want %v", tc.op.Kind, tc.op.Reply, got.Misrouted, tc.misrouted)
		}
	}
	got := Check("proxy", []Op{{Kind: kindEcho, Reply: replyTimeout}}, map[string][]string{"c0": {"garbage"}})
	if got.Lost != 1 || got.Misrouted != 1 {
		t.Fatalf("lost %d misrouted %d, want 1 and 1", got.Lost, got.Misrouted)
	}
}

func TestWallOverlaps(t *testing.T) {
	base := time.Now().UnixNano()
	ops := []Op{
		acq(0, 0, "c0", base), acq(1, 0, "c0", base+150*ms),
		del(1, 0, "c0", base+200*ms, ":1\r\n"), del(0, 0, "c0", base+300*ms, ":0\r\n"),
		acq(2, 0, "c1", base+150*ms), del(2, 0, "c1", base+160*ms, ":1\r\n"),
	}
	if n := wallOverlaps(ops); n != 1 {
		t.Fatalf("wall-clock overlaps %d, want 1", n)
	}
}

func TestEntryRoundTrip(t *testing.T) {
	s := formatEntry(42, 3, 7, "work", 123456789)
	e, err := parseEntry(s)
	if err != nil || e != (Entry{42, 3, 7, "work", 123456789}) {
		t.Fatalf("%q -> %+v %v", s, e, err)
	}
}

func TestPrintTable(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, []Totals{{Mode: "proxy"}, {Mode: "plain", StaleAccepted: 3}})
	out := b.String()
	if !strings.Contains(out, "lockproxy") || !strings.Contains(out, "plain Valkey") || !strings.Contains(out, "stale writes accepted  0  3") {
		t.Fatalf("table:\n%s", out)
	}
}

// A holder refused while its lease certainly ran is a violation when owners
// are portable (the several-instance run), and information otherwise.
func TestCheckHolderRefused(t *testing.T) {
	base := time.Now().UnixNano()
	ops := []Op{
		acq(0, 0, "c0", base), // lease 100 ms
		{W: 0, G: 0, Kind: kindToken, Lock: "c0", Reply: "$-1\r\n", S: base + ms, R: base + 2*ms},
		{W: 0, G: 0, Kind: kindWrite, Lock: "c0", Reply: "-UNFENCED lockproxy refused\r\n", S: base + 3*ms, R: base + 4*ms},
		del(0, 0, "c0", base+10*ms, "-NOTOWNER lockproxy refused DEL\r\n"),
		acq(1, 0, "c1", base),
		del(1, 0, "c1", base+10*ms, ":0\r\n"),
		// Not refusals, or past the lease: nothing to count.
		acq(2, 0, "c2", base),
		{W: 2, G: 0, Kind: kindToken, Lock: "c2", Reply: ":7\r\n", S: base + ms, R: base + 2*ms},
		del(2, 0, "c2", base+200*ms, "-NOTOWNER lockproxy refused DEL\r\n"),
	}
	got := Check("proxy", ops, nil)
	got.setPortable(true)
	if got.HolderRefused != 4 || got.Violations() != 4 {
		t.Fatalf("portable: %d holders refused, %d violations, want 4 and 4: %+v", got.HolderRefused, got.Violations(), got)
	}
	if !strings.HasPrefix(got.Examples[0], "holder refused: worker 0 grant 0") {
		t.Fatalf("examples: %q", got.Examples)
	}
	got = Check("proxy", ops, nil)
	got.setPortable(false)
	if got.HolderRefused != 4 || got.Violations() != 0 || len(got.Examples) != 0 {
		t.Fatalf("connection owners: %d holders refused, %d violations, examples %q; want 4, 0, none", got.HolderRefused, got.Violations(), got.Examples)
	}
}

// A token two grants of one lock learnt is a reused token (issue 29: a
// restart without persistence restarts a plain counter); the same grant
// asking twice, or two locks with the same number, is not.
func TestCheckReusedTokens(t *testing.T) {
	tok := func(w, g int, lock, reply string) Op {
		return Op{W: w, G: g, Kind: kindToken, Lock: lock, Reply: reply}
	}
	ops := []Op{
		tok(0, 0, "c0", ":1\r\n"), tok(0, 0, "c0", ":1\r\n"), tok(1, 0, "c1", ":1\r\n"),
		tok(0, 1, "c0", ":2\r\n"), tok(2, 0, "c0", "$-1\r\n"),
	}
	if got := Check("proxy", ops, nil); got.ReusedTokens != 0 || got.Violations() != 0 {
		t.Fatalf("no reuse: %+v", got)
	}
	ops = append(ops, tok(1, 1, "c0", ":2\r\n"))
	got := Check("plain", ops, nil)
	if got.ReusedTokens != 1 || got.Violations() != 1 || !strings.Contains(strings.Join(got.Examples, "\n"), "token reused: lock c0 token 2") {
		t.Fatalf("one reuse: %+v", got)
	}
}

// The Sentinel run's table counts its failovers (like the cluster's lossy
// ones), not Valkey restarts.
func TestPrintTableSentinel(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, []Totals{{Mode: "proxy", Sentinel: true, LossyFailovers: 2}, {Mode: "plain", Sentinel: true, LossyFailovers: 3}})
	out := b.String()
	if !strings.Contains(out, "replica promoted by Sentinel  2  3") || strings.Contains(out, "Valkey restarts") {
		t.Fatalf("table:\n%s", out)
	}
}
