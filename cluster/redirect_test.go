package cluster

import "testing"

func TestParseRedirect(t *testing.T) {
	const from = "10.0.0.1:7000"
	tests := []struct {
		reply string
		kind  RedirectKind
		to    string
	}{
		{"-MOVED 3999 10.0.0.2:7001\r\n", Moved, "10.0.0.2:7001"},
		{"-ASK 3999 10.0.0.3:7002\r\n", Ask, "10.0.0.3:7002"},
		{"-MOVED 3999 :7003\r\n", Moved, "10.0.0.1:7003"}, // no hostname announced: the answering node's
		{"-MOVED 3999 node-b.example:7004\r\n", Moved, "node-b.example:7004"},
		{"-MOVED 3999 [::1]:7005\r\n", Moved, "[::1]:7005"},
		{"-MOVED 3999\r\n", Moved, from},           // no address
		{"-MOVED 3999 host:port\r\n", Moved, from}, // no port number
		{"-TRYAGAIN Multiple keys request during rehashing of slot\r\n", TryAgain, from},
		{"-ERR unknown command\r\n", NoRedirect, from},
		{"-MOVEDX 1 h:1\r\n", NoRedirect, from},
		{"+OK\r\n", NoRedirect, from},
	}
	for _, tt := range tests {
		kind, to := ParseRedirect([]byte(tt.reply), from)
		if kind != tt.kind || to != tt.to {
			t.Errorf("ParseRedirect(%q) = %d, %q; want %d, %q", tt.reply, kind, to, tt.kind, tt.to)
		}
	}
}

func TestMyEpoch(t *testing.T) {
	info := "$200\r\ncluster_enabled:1\r\ncluster_state:ok\r\ncluster_current_epoch:9\r\ncluster_my_epoch:7\r\ncluster_stats_messages_sent:10\r\n"
	for _, tt := range []struct {
		reply string
		epoch int64
		ok    bool
	}{
		{info, 7, true},
		{"=20\r\ntxt:cluster_my_epoch:12\r\n", 12, true},
		{"-ERR This instance has cluster support disabled\r\n", 0, false},
		{"cluster_my_epoch:x\r\n", 0, false},
	} {
		e, ok := MyEpoch([]byte(tt.reply))
		if e != tt.epoch || ok != tt.ok {
			t.Errorf("MyEpoch(%q) = %d, %v", tt.reply, e, ok)
		}
	}
}

func TestSUnsubscribed(t *testing.T) {
	for _, proto := range []int{2, 3} {
		b := AppendSUnsubscribed(nil, proto, "{orders}:new", 2)
		if ch, ok := SUnsubscribed(b); !ok || ch != "{orders}:new" {
			t.Errorf("RESP%d: SUnsubscribed(%q) = %q, %v", proto, b, ch, ok)
		}
	}
	for _, b := range []string{
		"*3\r\n$8\r\nsmessage\r\n$1\r\nc\r\n$1\r\nm\r\n",
		"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n", // of no channel
		"*3\r\n$12\r\nsunsubscribe\r\n$1\r\nc\r\n",   // short
		":1\r\n",
	} {
		if ch, ok := SUnsubscribed([]byte(b)); ok {
			t.Errorf("SUnsubscribed(%q) = %q, true", b, ch)
		}
	}
}
