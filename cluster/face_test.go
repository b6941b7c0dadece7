package cluster

import (
	"strings"
	"testing"
)

// The face's CLUSTER SHARDS and SLOTS, read as the proxy reads a real
// cluster's, are a map of one primary, at the client's address, serving
// every slot; in both protocols.
func TestSingleNodeReadsBackAsOneNode(t *testing.T) {
	n := SingleNode{Host: "10.0.0.7", Port: 7000}
	for _, proto := range []int{2, 3} {
		sh, ok := n.Answer(args("CLUSTER", "SHARDS"), proto)
		if !ok {
			t.Fatal("CLUSTER SHARDS not answered")
		}
		m, err := FromShards(parse(t, sh), false, "")
		if err != nil {
			t.Fatal(err)
		}
		sl, ok := n.Answer(args("cluster", "slots"), proto)
		if !ok {
			t.Fatal("CLUSTER SLOTS not answered")
		}
		m2, err := FromSlots(parse(t, sl), "")
		if err != nil {
			t.Fatal(err)
		}
		if !m.Equal(m2) || len(m.Primaries) != 1 || m.Primaries[0] != "10.0.0.7:7000" || m.Covered() != SlotCount {
			t.Errorf("proto %d: shards %v, slots %v, covered %d", proto, m.Primaries, m2.Primaries, m.Covered())
		}
	}
}

func TestSingleNodeAnswer(t *testing.T) {
	n := SingleNode{Host: "::1", Port: 7000}
	tests := []struct {
		args  []string
		proto int
		want  string // a substring of the reply; "" when not answered
	}{
		{[]string{"CLUSTER", "NODES"}, 2, SingleNodeID + " [::1]:7000@7000 myself,master - 0 0 1 connected 0-16383\n"},
		{[]string{"CLUSTER", "NODES"}, 3, "="}, // a verbatim string
		{[]string{"CLUSTER", "INFO"}, 2, "cluster_state:ok\r\n"},
		{[]string{"CLUSTER", "INFO"}, 3, "txt:cluster_enabled:1\r\n"},
		{[]string{"CLUSTER", "MYID"}, 2, "$40\r\n" + SingleNodeID},
		{[]string{"CLUSTER", "MYSHARDID"}, 2, SingleNodeID},
		{[]string{"CLUSTER", "KEYSLOT", "foo"}, 2, ":12182\r\n"},
		{[]string{"CLUSTER", "KEYSLOT"}, 2, ""},
		{[]string{"CLUSTER", "SLOTS", "x"}, 2, ""},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "1"}, 2, ""}, // the slot's primary's
		{[]string{"CLUSTER", "FAILOVER"}, 2, ""},
		{[]string{"CLUSTER"}, 2, ""},
	}
	for _, tt := range tests {
		out, ok := n.Answer(args(tt.args...), tt.proto)
		if ok != (tt.want != "") || !strings.Contains(string(out), tt.want) {
			t.Errorf("%q (RESP%d) = %q, %v; want one with %q", tt.args, tt.proto, out, ok, tt.want)
		}
	}
}

func TestParseSlot(t *testing.T) {
	for _, tt := range []struct {
		in   string
		slot uint16
		ok   bool
	}{{"0", 0, true}, {"16383", 16383, true}, {"16384", 0, false}, {"-1", 0, false}, {"x", 0, false}} {
		if slot, ok := ParseSlot([]byte(tt.in)); slot != tt.slot || ok != tt.ok {
			t.Errorf("ParseSlot(%q) = %d, %v", tt.in, slot, ok)
		}
	}
}
