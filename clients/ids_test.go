package clients

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/resp"
)

func TestToValkeyIDs(t *testing.T) {
	// The proxy's client 7 has Valkey id 1007 on its own connection;
	// client 8 has no connection of its own.
	valkeyID := func(id uint64) int64 {
		if id == 7 {
			return 1007
		}
		return 0
	}
	for _, c := range []struct{ in, want []string }{
		{[]string{"CLIENT", "UNBLOCK", "7"}, []string{"CLIENT", "UNBLOCK", "1007"}},
		{[]string{"client", "unblock", "7", "ERROR"}, []string{"client", "unblock", "1007", "ERROR"}},
		{[]string{"CLIENT", "UNBLOCK", "8"}, []string{"CLIENT", "UNBLOCK", noClient}},
		{[]string{"CLIENT", "UNBLOCK", "99"}, []string{"CLIENT", "UNBLOCK", noClient}},
		{[]string{"CLIENT", "UNBLOCK", "0"}, nil},   // Valkey's own answer
		{[]string{"CLIENT", "UNBLOCK", "abc"}, nil}, // Valkey's error
		{[]string{"CLIENT", "UNBLOCK"}, nil},
		{[]string{"CLIENT", "KILL", "ID", "7"}, nil}, // the proxy answers KILL
	} {
		args := make([][]byte, len(c.in))
		for i, a := range c.in {
			args[i] = []byte(a)
		}
		cmd := resp.Command{Args: args, Raw: resp.AppendCommand(nil, args...)}
		got := ToValkeyIDs(cmd, valkeyID)
		want := c.want
		if want == nil {
			want = c.in
		}
		if string(got.Raw) != string(resp.AppendCommandStrings(nil, want...)) {
			t.Errorf("%q: got %q, want %q", c.in, got.Raw, want)
		}
	}
}

func TestIDsSwap(t *testing.T) {
	var h IDs
	h.Add(1007, 7)
	h.Add(0, 9) // not a Valkey id: not kept
	trackinginfo := "*6\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$8\r\nredirect\r\n:%s\r\n$8\r\nprefixes\r\n*0\r\n"
	for _, c := range []struct {
		sub, reply, want string
	}{
		{"getredir", ":1007\r\n", ":7\r\n"},
		{"GETREDIR", ":1008\r\n", ":1008\r\n"}, // no session had it
		{"getredir", ":-1\r\n", ":-1\r\n"},
		{"getredir", ":0\r\n", ":0\r\n"},
		{"trackinginfo", fmtID(trackinginfo, "1007"), fmtID(trackinginfo, "7")},
		{"trackinginfo", fmtID(trackinginfo, "-1"), fmtID(trackinginfo, "-1")},
		{"trackinginfo", "-ERR x\r\n", "-ERR x\r\n"},
	} {
		hook := h.RedirHook([]byte(c.sub))
		if got := string(hook([]byte(c.reply))); got != c.want {
			t.Errorf("%s %q: got %q, want %q", c.sub, c.reply, got, c.want)
		}
	}
	if h.RedirHook([]byte("id")) != nil {
		t.Error("a hook for CLIENT ID")
	}
	broken := ">2\r\n$21\r\ntracking-redir-broken\r\n:1007\r\n"
	if got := string(h.Push([]byte(broken))); got != ">2\r\n$21\r\ntracking-redir-broken\r\n:7\r\n" {
		t.Errorf("broken redirect push: %q", got)
	}
	inv := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"
	if got := string(h.Push([]byte(inv))); got != inv {
		t.Errorf("invalidate push changed: %q", got)
	}
}

func fmtID(tmpl, id string) string { return strings.Replace(tmpl, "%s", id, 1) }

// Only the last vidKeep ids are kept.
func TestIDsBounded(t *testing.T) {
	var h IDs
	for v := int64(1); v <= vidKeep+10; v++ {
		h.Add(v, uint64(v)+100000)
	}
	if _, ok := h.proxyID(10); ok {
		t.Error("the oldest id is still kept")
	}
	if id, ok := h.proxyID(vidKeep + 10); !ok || id != vidKeep+10+100000 {
		t.Errorf("the newest id: %d, %v", id, ok)
	}
	if n := len(h.ids); n != vidKeep {
		t.Errorf("%d ids kept, want %d", n, vidKeep)
	}
}

func TestHelloID(t *testing.T) {
	const resp2 = "*14\r\n$6\r\nserver\r\n$6\r\nvalkey\r\n$7\r\nversion\r\n$5\r\n8.0.1\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:%s\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	const resp3 = "%%7\r\n$6\r\nserver\r\n$6\r\nvalkey\r\n$7\r\nversion\r\n$5\r\n8.0.1\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:%s\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	for _, c := range []struct{ in, want string }{
		{fmt.Sprintf(resp2, "1234"), fmt.Sprintf(resp2, "7")},
		{fmt.Sprintf(resp3, "1234"), fmt.Sprintf(resp3, "7")},
		{fmt.Sprintf(resp3, "7"), fmt.Sprintf(resp3, "7")},
		// An attribute before the map stays.
		{"|1\r\n+a\r\n+b\r\n" + fmt.Sprintf(resp3, "12"), "|1\r\n+a\r\n+b\r\n" + fmt.Sprintf(resp3, "7")},
		// "id" as a value, not a field name, is not touched.
		{"*4\r\n$6\r\nserver\r\n$2\r\nid\r\n$2\r\nid\r\n:5\r\n", "*4\r\n$6\r\nserver\r\n$2\r\nid\r\n$2\r\nid\r\n:7\r\n"},
		{"*2\r\n$6\r\nserver\r\n$2\r\nid\r\n", ""},
		{"-NOPROTO unsupported protocol version\r\n", ""},
		{"-NOAUTH HELLO must be called with the client already authenticated\r\n", ""},
		{"*2\r\n$2\r\nid\r\n$1\r\n5\r\n", ""}, // not an integer: left alone
		{"*3\r\n$2\r\nid\r\n:5\r\n", ""},      // truncated
		{"", ""},
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		if got := string(HelloID([]byte(c.in), 7)); got != want {
			t.Errorf("HelloID(%q):\n got %q\nwant %q", c.in, got, want)
		}
	}
}
