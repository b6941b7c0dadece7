package cluster

import (
	"bytes"
	"testing"

	"github.com/lockproxy/lockproxy/resp"
)

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

// Split groups keys by slot in the order each slot's first key comes, and
// MSET's parts carry each key's value.
func TestSplit(t *testing.T) {
	tests := []struct {
		name  string
		args  [][]byte
		at    []int
		kind  SplitKind
		parts [][]string // each part's command
		idx   [][]int
	}{
		{"one slot", args("DEL", "{a}1", "{a}2"), []int{1, 2}, SplitSum,
			[][]string{{"DEL", "{a}1", "{a}2"}}, [][]int{{0, 1}}},
		{"two slots interleaved", args("MGET", "{a}1", "{b}1", "{a}2"), []int{1, 2, 3}, SplitMGet,
			[][]string{{"MGET", "{a}1", "{a}2"}, {"MGET", "{b}1"}}, [][]int{{0, 2}, {1}}},
		{"mset values follow keys", args("MSET", "{b}k", "v1", "{a}k", "v2", "{b}j", "v3"), []int{1, 3, 5}, SplitMSet,
			[][]string{{"MSET", "{b}k", "v1", "{b}j", "v3"}, {"MSET", "{a}k", "v2"}}, [][]int{{0, 2}, {1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := Split(tt.args, tt.at, tt.kind)
			if len(parts) != len(tt.parts) {
				t.Fatalf("%d parts, want %d", len(parts), len(tt.parts))
			}
			for i, pt := range parts {
				if !bytes.Equal(resp.AppendCommand(nil, pt.Cmd...), resp.AppendCommandStrings(nil, tt.parts[i]...)) {
					t.Errorf("part %d: %q, want %q", i, pt.Cmd, tt.parts[i])
				}
				if pt.Slot != Slot(pt.Cmd[1]) {
					t.Errorf("part %d: slot %d, its first key's is %d", i, pt.Slot, Slot(pt.Cmd[1]))
				}
				if len(pt.Idx) != len(tt.idx[i]) {
					t.Fatalf("part %d: idx %v, want %v", i, pt.Idx, tt.idx[i])
				}
				for j := range pt.Idx {
					if pt.Idx[j] != tt.idx[i][j] {
						t.Errorf("part %d: idx %v, want %v", i, pt.Idx, tt.idx[i])
					}
				}
			}
			// The parts are copies: the client's buffer may be reused.
			for _, a := range tt.args {
				for i := range a {
					a[i] = 'x'
				}
			}
			if bytes.Equal(parts[0].Cmd[0], tt.args[0]) {
				t.Errorf("part shares the client's bytes")
			}
		})
	}
}

func bulks(s ...string) []byte {
	els := make([][]byte, len(s))
	for i, v := range s {
		if v == "<nil>" {
			els[i] = []byte("$-1\r\n")
		} else {
			els[i] = resp.AppendBulkString(nil, v)
		}
	}
	return AppendArray(nil, els)
}

func TestCombine(t *testing.T) {
	mget := Split(args("MGET", "{a}1", "{b}1", "{a}2"), []int{1, 2, 3}, SplitMGet)
	two := Split(args("DEL", "{a}1", "{b}1"), []int{1, 2}, SplitSum)
	tests := []struct {
		name    string
		kind    SplitKind
		parts   []*Part
		replies []string
		nkeys   int
		want    string
	}{
		{"sum", SplitSum, two, []string{":1\r\n", ":2\r\n"}, 2, ":3\r\n"},
		{"sum, an error", SplitSum, two, []string{":1\r\n", "-ERR x\r\n"}, 2, "-ERR x\r\n"},
		{"mset", SplitMSet, two, []string{"+OK\r\n", "+OK\r\n"}, 2, "+OK\r\n"},
		{"mset, an error", SplitMSet, two, []string{"+OK\r\n", "-OOM no\r\n"}, 2, "-OOM no\r\n"},
		{"mget in key order", SplitMGet, mget, []string{string(bulks("a1", "<nil>")), string(bulks("b1"))}, 3, string(bulks("a1", "b1", "<nil>"))},
		{"mget, an error", SplitMGet, mget, []string{string(bulks("a1", "a2")), "-MOVED 1 h:1\r\n"}, 3, "-MOVED 1 h:1\r\n"},
		{"mget, a short reply", SplitMGet, mget, []string{string(bulks("a1")), string(bulks("b1"))}, 3, string(bulks("a1"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := make([][]byte, len(tt.replies))
			for i, r := range tt.replies {
				replies[i] = []byte(r)
			}
			if got := Combine(tt.kind, tt.parts, replies, tt.nkeys); string(got) != tt.want {
				t.Errorf("Combine = %q, want %q", got, tt.want)
			}
		})
	}
}
