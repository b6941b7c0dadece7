package locks

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// TestEncodeScript: the sized encoding is exactly the generic one, as
// EVALSHA and as EVAL, and EvalFromSHA turns the one into the other.
func TestEncodeScript(t *testing.T) {
	big := bytes.Repeat([]byte("v"), 100000)
	for _, plan := range []rewrite.Plan{
		{Script: rewrite.Acquire, Keys: [][]byte{[]byte("a:lock"), rewrite.CounterKey([]byte("a:lock"))},
			Args: [][]byte{[]byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")}},
		{Script: rewrite.Release, Keys: [][]byte{[]byte("plain"), []byte("b:lock"), []byte("{b:lock}:lockproxy:grants")},
			Args: [][]byte{[]byte("DEL"), []byte("1"), big, []byte("123456789012")}},
		{Script: rewrite.Release, Keys: nil, Args: [][]byte{{}, nil}},
	} {
		for _, sha := range []bool{true, false} {
			name, body := "EVAL", plan.Script.Body
			if sha {
				name, body = "EVALSHA", plan.Script.SHA
			}
			args := [][]byte{[]byte(name), []byte(body), []byte(strconv.Itoa(len(plan.Keys)))}
			args = append(append(args, plan.Keys...), plan.Args...)
			want := resp.AppendCommand(nil, args...)
			got := EncodeScript(plan, sha)
			if !bytes.Equal(got, want) {
				t.Fatalf("EncodeScript(%s, sha=%v) =\n%q\nwant\n%q", plan.Script.SHA, sha, trunc(got), trunc(want))
			}
			if sha {
				if eval := EvalFromSHA(got); !bytes.Equal(eval, EncodeScript(plan, false)) {
					t.Fatalf("EvalFromSHA(EVALSHA) is not the EVAL encoding:\n%q", trunc(eval))
				}
			}
		}
	}
}

func trunc(b []byte) string {
	s := string(b)
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TestEncodeScriptOneAllocation: the encoding's buffer is sized up front.
func TestEncodeScriptOneAllocation(t *testing.T) {
	plan := rewrite.Plan{Script: rewrite.Acquire, Keys: [][]byte{[]byte("a:lock"), []byte("{a:lock}:lockproxy:grants")},
		Args: [][]byte{[]byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")}}
	if n := testing.AllocsPerRun(100, func() { EncodeScript(plan, true) }); n != 1 {
		t.Fatalf("EncodeScript allocates %v times, want 1", n)
	}
	// And no more than it needs: the estimate is exact but for slack,
	// whatever the number of digits in the lengths.
	big := plan
	big.Args = [][]byte{bytes.Repeat([]byte("v"), 12345), []byte("NX")}
	for _, p := range []rewrite.Plan{plan, big} {
		for _, sha := range []bool{true, false} {
			if n := testing.AllocsPerRun(10, func() { EncodeScript(p, sha) }); n != 1 {
				t.Errorf("EncodeScript(sha=%v) allocates %v times, want 1", sha, n)
			}
			out := EncodeScript(p, sha)
			if cap(out) > len(out)+8 {
				t.Errorf("EncodeScript(sha=%v): %d bytes in a buffer of %d", sha, len(out), cap(out))
			}
		}
	}
}
