package keyspec

import "testing"

// Blocks: the "blocking" flag, and for XREAD and XREADGROUP a BLOCK option
// before STREAMS, matched as Valkey's strcasecmp does.
func TestBlocks(t *testing.T) {
	tab, err := FromCommandReply([]interface{}{
		[]interface{}{"xread", int64(-4), []interface{}{"readonly", "blocking", "movablekeys"}, int64(0), int64(0), int64(0),
			[]interface{}{"@stream"}, []interface{}{}, []interface{}{}, []interface{}{}},
		[]interface{}{"blpop", int64(-3), []interface{}{"write", "blocking"}, int64(1), int64(-2), int64(1),
			[]interface{}{"@list"}, []interface{}{}, []interface{}{}, []interface{}{}},
		[]interface{}{"lpop", int64(-2), []interface{}{"write", "fast"}, int64(1), int64(1), int64(1),
			[]interface{}{"@list"}, []interface{}{}, []interface{}{}, []interface{}{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	args := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, a := range s {
			out[i] = []byte(a)
		}
		return out
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"XREAD", "STREAMS", "s", "0"}, false},
		{[]string{"XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "0"}, true},
		{[]string{"xread", "block\x00x", "0", "streams", "s", "0"}, true},
		{[]string{"XREAD", "STREAMS", "block", "0"}, false},
		{[]string{"BLPOP", "k", "0"}, true},
		{[]string{"LPOP", "k"}, false},
	} {
		a := args(tc.args...)
		if got := tab.Command(a).Blocks(a); got != tc.want {
			t.Errorf("%q: Blocks = %v, want %v", tc.args, got, tc.want)
		}
	}
}
