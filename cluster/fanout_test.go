package cluster

import "testing"

func TestFanOutPolicy(t *testing.T) {
	tests := []struct {
		tips []string
		kind FoldKind
		fan  bool
	}{
		{nil, FoldConcat, false},
		{[]string{"nondeterministic_output"}, FoldConcat, false},
		{[]string{"request_policy:all_shards", "response_policy:agg_sum"}, FoldSum, true},          // DBSIZE
		{[]string{"request_policy:all_shards", "nondeterministic_output_order"}, FoldConcat, true}, // KEYS
		{[]string{"request_policy:all_nodes", "response_policy:all_succeeded"}, FoldAllOK, true},   // SCRIPT LOAD
		{[]string{"request_policy:all_shards", "response_policy:one_succeeded"}, FoldOneOK, true},  // SCRIPT KILL
		{[]string{"request_policy:all_nodes", "response_policy:agg_logical_and"}, FoldAnd, true},   // SCRIPT EXISTS
		{[]string{"request_policy:all_shards", "response_policy:agg_logical_or"}, FoldOr, true},
		{[]string{"request_policy:all_shards", "response_policy:special"}, FoldAny, true}, // RANDOMKEY
	}
	for _, tt := range tests {
		k, fan := FanOutPolicy(tt.tips)
		if k != tt.kind || fan != tt.fan {
			t.Errorf("FanOutPolicy(%q) = %d, %v; want %d, %v", tt.tips, k, fan, tt.kind, tt.fan)
		}
	}
}

func TestFold(t *testing.T) {
	ints := func(n ...string) []byte {
		els := make([][]byte, len(n))
		for i, v := range n {
			els[i] = []byte(":" + v + "\r\n")
		}
		return AppendArray(nil, els)
	}
	tests := []struct {
		name    string
		kind    FoldKind
		replies []string
		want    string
	}{
		{"sum", FoldSum, []string{":1\r\n", ":0\r\n", ":41\r\n"}, ":42\r\n"},
		{"sum, not a number", FoldSum, []string{":1\r\n", "+OK\r\n"}, "+OK\r\n"},
		{"sum, an error first", FoldSum, []string{":1\r\n", "-ERR a\r\n", "-ERR b\r\n"}, "-ERR a\r\n"},
		{"all ok", FoldAllOK, []string{"$40\r\n" + "0123456789012345678901234567890123456789" + "\r\n", "$40\r\n" + "0123456789012345678901234567890123456789" + "\r\n"}, "$40\r\n0123456789012345678901234567890123456789\r\n"},
		{"all ok, one fails", FoldAllOK, []string{"+OK\r\n", "-NOSCRIPT x\r\n"}, "-NOSCRIPT x\r\n"},
		{"one ok", FoldOneOK, []string{"-NOTBUSY a\r\n", "+OK\r\n"}, "+OK\r\n"},
		{"one ok, none", FoldOneOK, []string{"-NOTBUSY a\r\n", "-NOTBUSY b\r\n"}, "-NOTBUSY a\r\n"},
		{"and", FoldAnd, []string{string(ints("1", "1", "0")), string(ints("1", "0", "1"))}, string(ints("1", "0", "0"))},
		{"or", FoldOr, []string{string(ints("1", "0", "0")), string(ints("0", "0", "1"))}, string(ints("1", "0", "1"))},
		{"and, lengths differ", FoldAnd, []string{string(ints("1")), string(ints("1", "1"))}, string(ints("1", "1"))},
		{"concat", FoldConcat, []string{string(bulks("a", "b")), string(bulks()), string(bulks("c"))}, string(bulks("a", "b", "c"))},
		{"concat, not arrays", FoldConcat, []string{":1\r\n", ":2\r\n"}, ":1\r\n"},
		{"any", FoldAny, []string{"$1\r\nk\r\n"}, "$1\r\nk\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			replies := make([][]byte, len(tt.replies))
			for i, r := range tt.replies {
				replies[i] = []byte(r)
			}
			if got := Fold(tt.kind, replies); string(got) != tt.want {
				t.Errorf("Fold = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestElements(t *testing.T) {
	tests := []struct {
		in string
		n  int
		ok bool
	}{
		{"*0\r\n", 0, true},
		{"*2\r\n$1\r\na\r\n*1\r\n:1\r\n", 2, true},
		{"*2\r\n$1\r\na\r\n", 0, false},  // short
		{"*1\r\n:1\r\n:2\r\n", 0, false}, // more than one reply
		{"$1\r\na\r\n", 0, false},        // not an array
		{"*-1\r\n", 0, false},            // null array
		{"", 0, false},
	}
	for _, tt := range tests {
		els, ok := Elements([]byte(tt.in))
		if ok != tt.ok || ok && len(els) != tt.n {
			t.Errorf("Elements(%q) = %d elements, %v; want %d, %v", tt.in, len(els), ok, tt.n, tt.ok)
		}
		if ok && string(AppendArray(nil, els)) != tt.in {
			t.Errorf("AppendArray(Elements(%q)) = %q", tt.in, AppendArray(nil, els))
		}
	}
}
