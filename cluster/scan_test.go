package cluster

import (
	"strconv"
	"testing"

	"github.com/lockproxy/lockproxy/resp"
)

func TestScanCursor(t *testing.T) {
	tests := []struct {
		cursor    uint64
		primaries int
		idx       int
		node      uint64
		ok        bool
	}{
		{0, 3, 0, 0, true},
		{2, 3, 2, 0, true},
		{3, 3, 0, 0, false}, // names a fourth primary
		{17<<8 | 1, 3, 1, 17, true},
		{1, 0, 0, 0, false},
	}
	for _, tt := range tests {
		idx, node, ok := ScanCursor(tt.cursor, tt.primaries)
		if idx != tt.idx || node != tt.node || ok != tt.ok {
			t.Errorf("ScanCursor(%d, %d) = %d, %d, %v; want %d, %d, %v", tt.cursor, tt.primaries, idx, node, ok, tt.idx, tt.node, tt.ok)
		}
	}
}

func TestScanReply(t *testing.T) {
	reply := func(cursor uint64) []byte {
		return AppendArray(nil, [][]byte{resp.AppendBulkString(nil, strconv.FormatUint(cursor, 10)), bulks("k1", "k2")})
	}
	tests := []struct {
		name  string
		reply []byte
		idx   int
		more  bool
		want  []byte
		ok    bool
	}{
		{"node goes on", reply(5), 2, true, reply(5<<8 | 2), true},
		{"node done, next primary", reply(0), 1, true, reply(2), true},
		{"last node done", reply(0), 2, false, reply(0), true},
		{"node cursor too large", reply(1 << 60), 0, true, nil, false},
		{"an error as it is", []byte("-ERR x\r\n"), 0, true, []byte("-ERR x\r\n"), true},
	}
	for _, tt := range tests {
		got, ok := ScanReply(tt.reply, tt.idx, tt.more)
		if string(got) != string(tt.want) || ok != tt.ok {
			t.Errorf("%s: ScanReply = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	// What ScanReply hands out, ScanCursor reads back.
	out, _ := ScanReply(reply(77), 1, true)
	els, _ := Elements(out)
	v, _, _ := resp.Parse(els[0])
	c, _ := strconv.ParseUint(string(v.Str), 10, 64)
	if idx, node, ok := ScanCursor(c, 3); idx != 1 || node != 77 || !ok {
		t.Errorf("round trip: %d, %d, %v", idx, node, ok)
	}
}
