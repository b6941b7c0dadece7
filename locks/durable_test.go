package locks

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

func TestDurability(t *testing.T) {
	one := &policy.DurabilityConfig{Replicas: 1, Timeout: time.Second}
	two := &policy.DurabilityConfig{Replicas: 2, Timeout: time.Second}
	r1, r2, plain := &policy.Rule{Durability: one}, &policy.Rule{Durability: two}, &policy.Rule{}
	for _, tc := range []struct {
		name string
		plan rewrite.Plan
		want *policy.DurabilityConfig
	}{
		{"acquire", rewrite.Plan{Script: rewrite.Acquire, Effects: []rewrite.Effect{{Rule: r1}}}, one},
		{"renew", rewrite.Plan{Script: rewrite.Holder, Effects: []rewrite.Effect{{Rule: r2}}}, two},
		{"acquire, no durability", rewrite.Plan{Script: rewrite.Acquire, Effects: []rewrite.Effect{{Rule: plain}}}, nil},
		{"fenced: the strictest", rewrite.Plan{Script: rewrite.Fenced, Effects: []rewrite.Effect{
			{Kind: rewrite.FencedWrite, Rule: r1}, {Kind: rewrite.FencedWrite, Rule: r2}, {Kind: rewrite.FencedWrite, Rule: plain}}}, two},
		{"release", rewrite.Plan{Script: rewrite.Release, Effects: []rewrite.Effect{{Rule: r2}}}, nil},
	} {
		if got := Durability(tc.plan); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := string(WaitCommand(&policy.DurabilityConfig{Replicas: 2, Timeout: 1500 * time.Millisecond})); got != "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$4\r\n1500\r\n" {
		t.Errorf("WaitCommand: %q", got)
	}
}

// DurableLocks keeps in front of a cluster only the locks in the script's
// slot; CountersRead reads their counters, and counters reads its reply.
func TestDurableLocksAndCounters(t *testing.T) {
	lock := func(k string) []string { return []string{k, "{" + k + "}:c", "{" + k + "}:r", "conn:x"} }
	var dl [][]byte
	for _, k := range append(lock("a"), lock("b")...) {
		dl = append(dl, []byte(k))
	}
	plan := rewrite.Plan{Keys: [][]byte{[]byte("{a}x")}, DurableLocks: dl}
	if got := DurableLocks(plan, false); len(got) != 8 {
		t.Errorf("single node: %d fields, want 8", len(got))
	}
	got := DurableLocks(plan, true)
	if len(got) != 4 || string(got[0]) != "a" {
		t.Fatalf("cluster: %q, want a's lock only", got)
	}
	if r := string(CountersRead(DurableLocks(plan, false))); r != "*3\r\n$4\r\nMGET\r\n$5\r\n{a}:c\r\n$5\r\n{b}:c\r\n" {
		t.Errorf("CountersRead: %q", r)
	}
	for reply, want := range map[string]string{
		"*2\r\n$1\r\n7\r\n$-1\r\n":     "[7 0]",
		"*1\r\n$1\r\n7\r\n":            "[]",
		"*2\r\n$1\r\nx\r\n$1\r\n1\r\n": "[]",
		"-NOPERM no\r\n":               "[]",
	} {
		if got := fmt.Sprint(counters([]byte(reply), 2)); got != want {
			t.Errorf("counters(%q) = %s, want %s", reply, got, want)
		}
	}
}

// The answers of an acquisition that was not made durable.
func TestNotTaken(t *testing.T) {
	d := &policy.DurabilityConfig{Replicas: 1, Timeout: time.Second}
	for _, tc := range []struct {
		shape rewrite.Shape
		proto int
		want  string
	}{
		{rewrite.SetNXReply, 2, ":0\r\n"},
		{rewrite.AcquireReply, 2, "$-1\r\n"},
		{rewrite.AcquireReply, 3, "_\r\n"},
		{rewrite.AcquireGetReply, 2, "-NOTDURABLE lockproxy undid the acquisition of \"a\""},
	} {
		if got := string(notTaken(tc.shape, "a", d, tc.proto)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("notTaken(%v, RESP%d) = %q, want %q", tc.shape, tc.proto, got, tc.want)
		}
	}
}

// grant is a lock's grant for the durable tests: epoch 1, number n.
func grant(n int64) int64 { return 1<<rewrite.EpochShift | n }

// An acquisition its WAIT did not vouch for is answered "not taken" and
// undone in Valkey, but only while the lock still holds that grant; with
// enough replicas the client gets the reply. Whichever reply comes first.
func TestAcquireWait(t *testing.T) {
	srv := valkeytest.Start(t)
	c := valkeytest.Dial(t, srv.Addr, 2)
	d := &policy.DurabilityConfig{Replicas: 1, Timeout: time.Second}
	g := itoa(grant(1))
	for _, tc := range []struct {
		name      string
		counter   string // the counter when the undo runs
		acked     string
		waitFirst bool
		want      string
		undone    int64
		exists    string // the lock after the undo
	}{
		{"acknowledged", g, ":1\r\n", false, ":1\r\n", 0, ":1\r\n"},
		{"short: undone", g, ":0\r\n", false, ":0\r\n", 1, ":0\r\n"},
		{"short, a later grant: kept", itoa(grant(2)), ":0\r\n", false, ":0\r\n", 1, ":1\r\n"},
		{"WAIT answered first: undone", g, ":1\r\n", true, ":0\r\n", 1, ":0\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.Do(t, "FLUSHALL")
			c.Do(t, "SET", "a", "tok")
			c.Do(t, "SET", "a:c", tc.counter)
			c.Do(t, "HSET", "a:r", "conn:x", g+" 0 0 tok")
			h := &testHost{addr: srv.Addr}
			var wg sync.WaitGroup
			k := newTestKeeper(h, &wg)
			plan := rewrite.Plan{Script: rewrite.Acquire, Shape: rewrite.SetNXReply,
				Keys:    [][]byte{[]byte("a"), []byte("a:c"), []byte("a:r")},
				Effects: []rewrite.Effect{{Kind: rewrite.Grant, Key: []byte("a"), Owner: "conn:x", Value: []byte("tok")}}}
			onScript, onWait := k.AcquireWait(&testClient{}, plan, d, 0, 2)
			script := []byte("*2\r\n:" + g + "\r\n+OK\r\n")
			var out []byte
			if tc.waitFirst {
				out = onWait([]byte(tc.acked))
				onScript(script)
			} else {
				onScript(script)
				out = onWait([]byte(tc.acked))
			}
			wg.Wait()
			if string(out) != tc.want {
				t.Errorf("answer %q, want %q", out, tc.want)
			}
			if n := k.Undone.Load(); n != tc.undone {
				t.Errorf("undone %d, want %d", n, tc.undone)
			}
			if got := string(c.Do(t, "EXISTS", "a")); got != tc.exists {
				t.Errorf("EXISTS a = %q, want %q", got, tc.exists)
			}
		})
	}
}

// A renewal or fenced write answers NOTDURABLE when short, and the
// command's reply when its replicas acknowledged it, or when it failed.
func TestWriteWait(t *testing.T) {
	d := &policy.DurabilityConfig{Replicas: 2, Timeout: time.Second}
	plan := rewrite.Plan{Script: rewrite.Holder, Shape: rewrite.AsIs,
		Effects: []rewrite.Effect{{Kind: rewrite.Renewed, Key: []byte("a")}}}
	for _, tc := range []struct {
		reply, acked, want string
		short              int64
	}{
		{":1\r\n", ":2\r\n", ":1\r\n", 0},
		{":1\r\n", ":1\r\n", "-NOTDURABLE lockproxy made the change to \"a\"", 1},
		{"-ERR x\r\n", ":0\r\n", "-ERR x\r\n", 0},
		{"", ":2\r\n", "-NOTDURABLE", 1}, // the WAIT's reply first
	} {
		k := newTestKeeper(&testHost{}, &sync.WaitGroup{})
		onScript, onWait := k.WriteWait(&testClient{}, plan, d, 2)
		if tc.reply != "" {
			onScript([]byte(tc.reply))
		}
		if got := string(onWait([]byte(tc.acked))); !strings.HasPrefix(got, tc.want) || k.Short.Load() != tc.short {
			t.Errorf("%q then %q: %q, short %d; want %q, %d", tc.reply, tc.acked, got, k.Short.Load(), tc.want, tc.short)
		}
	}
}

// A client's script that too few replicas acknowledged: the grants it
// minted (above the counters read before it) are undone in Valkey, a lock
// it held before is left alone, and the client gets NOTDURABLE.
func TestScriptWaitUndoesMinted(t *testing.T) {
	srv := valkeytest.Start(t)
	c := valkeytest.Dial(t, srv.Addr, 2)
	for _, l := range []struct{ key, grant string }{{"new", itoa(grant(5))}, {"held", itoa(grant(3))}} {
		c.Do(t, "SET", l.key, "tok")
		c.Do(t, "SET", l.key+":c", l.grant)
		c.Do(t, "HSET", l.key+":r", "conn:x", l.grant+" 0 0 tok")
	}
	dl := [][]byte{[]byte("new"), []byte("new:c"), []byte("new:r"), []byte("conn:x"),
		[]byte("held"), []byte("held:c"), []byte("held:r"), []byte("conn:x")}
	d := &policy.DurabilityConfig{Replicas: 1, Timeout: time.Second}
	plan := rewrite.Plan{Script: &rewrite.Script{}, Shape: rewrite.AsIs, Durable: d}
	var wg sync.WaitGroup
	k := newTestKeeper(&testHost{addr: srv.Addr}, &wg)
	onCounters, onScript, onWait := k.ScriptWait(plan, dl, 0, 2)
	// Read before the script: new's counter was one grant lower.
	onCounters([]byte("*2\r\n$10\r\n" + itoa(grant(4)) + "\r\n$10\r\n" + itoa(grant(3)) + "\r\n"))
	onScript([]byte("+OK\r\n"))
	out := string(onWait([]byte(":0\r\n")))
	wg.Wait()
	if !strings.HasPrefix(out, "-NOTDURABLE fewer than 1 replicas") || !strings.Contains(out, `lock "new"`) {
		t.Errorf("answer %q", out)
	}
	if k.Undone.Load() != 1 || k.Short.Load() != 1 {
		t.Errorf("undone %d, short %d; want 1, 1", k.Undone.Load(), k.Short.Load())
	}
	if got := string(c.Do(t, "EXISTS", "new", "held")); got != ":1\r\n" {
		t.Errorf("EXISTS new held = %q, want only held", got)
	}
}

// A durable transaction: its WAIT answered before EXEC's reply cannot
// vouch for it; otherwise each element is shaped with the WAIT's count.
func TestExecWait(t *testing.T) {
	d := &policy.DurabilityConfig{Replicas: 2, Timeout: time.Second}
	k := newTestKeeper(&testHost{}, &sync.WaitGroup{})
	plan := rewrite.Plan{Script: rewrite.Holder, Shape: rewrite.AsIs, Effects: []rewrite.Effect{{Kind: rewrite.Renewed, Key: []byte("a")}}}

	tx := &Txn{}
	tx.Raise(&policy.DurabilityConfig{Replicas: 1, Timeout: 3 * time.Second})
	tx.Raise(d)
	if got := string(tx.WaitCommand()); got != "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$4\r\n3000\r\n" {
		t.Fatalf("the transaction's WAIT: %q", got)
	}
	el := k.TxnWrite(tx, plan, d, func(b []byte) []byte { return b })
	for _, tc := range []struct{ acked, want string }{{":2\r\n", ":1\r\n"}, {":1\r\n", "-NOTDURABLE"}} {
		onExec, onWait := ExecWait(tx, func(r []byte) []byte { return el([]byte(":1\r\n")) })
		onExec([]byte("*1\r\n:1\r\n"))
		if got := string(onWait([]byte(tc.acked))); !strings.HasPrefix(got, tc.want) {
			t.Errorf("acked %q: %q, want %q", tc.acked, got, tc.want)
		}
	}
	_, onWait := ExecWait(tx, func(r []byte) []byte { return r })
	if got := string(onWait([]byte(":2\r\n"))); !strings.HasPrefix(got, "-NOTDURABLE lockproxy could not tell") {
		t.Errorf("WAIT first: %q", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
