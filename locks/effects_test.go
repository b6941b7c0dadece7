package locks

import (
	"sync"
	"testing"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
)

func TestAccepted(t *testing.T) {
	for reply, want := range map[string]bool{
		"+OK\r\n": true, ":0\r\n": true, "$-1\r\n": true, "_\r\n": true,
		"-ERR x\r\n": false, "!5\r\nERR x\r\n": false, "": false,
	} {
		if got := Accepted([]byte(reply)); got != want {
			t.Errorf("Accepted(%q) = %v, want %v", reply, got, want)
		}
	}
}

func TestReleaseDetailAndStaleToken(t *testing.T) {
	for n, want := range map[int64]string{
		0: "token-checked release deleted 0 key(s)",
		1: "token-checked release deleted 1 key(s)",
		3: "token-checked release deleted 3 key(s)",
	} {
		if got := releaseDetail(n); got != want {
			t.Errorf("releaseDetail(%d) = %q, want %q", n, got, want)
		}
	}
	for reply, want := range map[string]int64{
		"-STALE lockproxy refused the write to \"k\" with fencing token 33: a newer grant\r\n": 33,
		"-STALE no token here\r\n":           0,
		"-STALE with fencing token x: y\r\n": 0,
	} {
		if got := staleToken([]byte(reply)); got != want {
			t.Errorf("staleToken(%q) = %d, want %d", reply, got, want)
		}
	}
}

// Apply: what a reply meant, by effect kind and reply. Valkey's own
// error records nothing; a script's refusal is recorded; a STALE reply
// records the refused token.
func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name    string
		effects []rewrite.Effect
		reply   string
		outcome telemetry.Outcome // "" when no event
		detail  string
		grants  [3]int // granted, contended, released
	}{
		{"granted", []rewrite.Effect{{Kind: rewrite.Grant, Key: []byte("a"), Grant: 1 << 32}}, "+OK\r\n", "", "", [3]int{1, 0, 0}},
		{"contended", []rewrite.Effect{{Kind: rewrite.Grant, Key: []byte("a")}}, "$-1\r\n", "", "", [3]int{0, 1, 0}},
		{"valkey refused", []rewrite.Effect{{Kind: rewrite.Grant, Key: []byte("a"), Grant: 5}}, "-OOM no\r\n", "", "", [3]int{}},
		{"released", []rewrite.Effect{{Kind: rewrite.Released, Key: []byte("a"), Outcome: rewrite.OutcomeReleased}}, ":1\r\n",
			telemetry.OutcomeRewritten, "token-checked release deleted 1 key(s)", [3]int{0, 0, 1}},
		{"superseded", []rewrite.Effect{{Kind: rewrite.Released, Key: []byte("a"), Outcome: rewrite.OutcomeSuperseded, Holder: "conn:b"}}, ":0\r\n",
			telemetry.OutcomeSuccessorPrevented, "the lock is now conn:b's; not deleted", [3]int{0, 0, 1}},
		{"forwarded over a successor", []rewrite.Effect{{Kind: rewrite.Released, Key: []byte("a"), Outcome: rewrite.OutcomeForwarded, Holder: "conn:b"}}, ":1\r\n",
			telemetry.OutcomeSuccessorDeleted, "deleted a lock granted to conn:b", [3]int{}},
		{"refused by the script", []rewrite.Effect{{Kind: rewrite.Refused, Key: []byte("a"), Reason: "NOTOWNER x"}}, "-NOTOWNER x\r\n",
			telemetry.OutcomeRefused, "NOTOWNER x", [3]int{}},
		{"renewed, no longer holder", []rewrite.Effect{{Kind: rewrite.Renewed, Key: []byte("a")}}, ":0\r\n",
			telemetry.OutcomeRewritten, "token-checked lease change: no longer the holder, nothing changed", [3]int{}},
		{"stale", []rewrite.Effect{{Kind: rewrite.FencedWrite, Key: []byte("g")}}, "-STALE with fencing token 7: newer\r\n",
			telemetry.OutcomeStaleRefused, "STALE with fencing token 7: newer", [3]int{}},
		{"fenced write passed", []rewrite.Effect{{Kind: rewrite.FencedWrite, Key: []byte("g")}}, "+OK\r\n", "", "", [3]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &testHost{}
			k := newTestKeeper(h, &sync.WaitGroup{})
			k.Apply(&testClient{}, tc.effects, []byte(tc.reply))
			if got := [3]int{h.granted, h.contended, h.released}; got != tc.grants {
				t.Errorf("granted, contended, released = %v, want %v", got, tc.grants)
			}
			if tc.outcome == "" {
				if len(h.events) != 0 {
					t.Fatalf("events %+v, want none", h.events)
				}
				return
			}
			if len(h.events) != 1 {
				t.Fatalf("events %+v, want one", h.events)
			}
			ev := h.events[0]
			if ev.Outcome != tc.outcome || ev.Detail != tc.detail || ev.Client != "127.0.0.1:5555" || ev.Name != "app" {
				t.Errorf("event %+v, want outcome %q detail %q", ev, tc.outcome, tc.detail)
			}
			if tc.outcome == telemetry.OutcomeStaleRefused && ev.Grant != 7 {
				t.Errorf("stale event's token %d, want 7", ev.Grant)
			}
		})
	}
}

// The reply hooks: a forwarded command's learn hears whether Valkey
// carried it out; the type gate passes Valkey's WRONGTYPE and otherwise
// answers the refusal, recorded; a script's reply is folded.
func TestHooks(t *testing.T) {
	h := &testHost{}
	k := newTestKeeper(h, &sync.WaitGroup{})
	c := &testClient{}
	var learned []bool
	fwd := k.ForwardHook(c, nil, func(ok bool) { learned = append(learned, ok) })
	fwd([]byte("+OK\r\n"))
	fwd([]byte("-ERR no\r\n"))
	if len(learned) != 2 || !learned[0] || learned[1] {
		t.Errorf("learned %v, want [true false]", learned)
	}
	refused := []rewrite.Effect{{Kind: rewrite.Refused, Key: []byte("h"), Reason: "LOCKED x"}}
	gate := k.TypeGateHook(c, refused, "LOCKED x")
	if got := string(gate([]byte("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"))); got[:10] != "-WRONGTYPE" || len(h.events) != 0 {
		t.Errorf("WRONGTYPE: %q, %d events", got, len(h.events))
	}
	if got := string(gate([]byte("-LOCKED 1\r\n"))); got != "-LOCKED x\r\n" || len(h.events) != 1 {
		t.Errorf("refused: %q, %d events", got, len(h.events))
	}
	run := k.RunHook(c, rewrite.Plan{Script: rewrite.Acquire, Shape: rewrite.SetNXReply,
		Effects: []rewrite.Effect{{Kind: rewrite.Grant, Key: []byte("a")}}}, 2)
	if got := string(run([]byte("*2\r\n:4294967297\r\n+OK\r\n"))); got != ":1\r\n" || h.granted != 1 {
		t.Errorf("run: %q, granted %d", got, h.granted)
	}
}
