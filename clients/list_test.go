package clients

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// testClient is a client as a session shows itself to this package.
type testClient struct {
	sn      *Snap
	c       Conn
	aborted bool
}

func (t *testClient) Snap() *Snap { return t.sn }
func (t *testClient) Conn() Conn  { return t.c }
func (t *testClient) Abort()      { t.aborted = true }

var t0 = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func client(id uint64, addr string, sn Snap) *testClient {
	if sn.Flags == "" {
		sn.Flags = "N"
	}
	if sn.User == "" {
		sn.User = "default"
	}
	return &testClient{sn: &sn, c: Conn{ID: id, Addr: addr, Laddr: "127.0.0.1:6380", Fd: 9,
		Since: t0.Add(-time.Duration(id) * time.Minute), LastActive: t0, Cmd: "NULL"}}
}

func words(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, x := range s {
		out[i] = []byte(x)
	}
	return out
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		f       FlagState
		blocked bool
		want    string
	}{
		{FlagState{}, false, "N"},
		{FlagState{}, true, "b"},
		{FlagState{Multi: true}, false, "x"},
		{FlagState{Multi: true, NoEvict: true}, true, "xbe"},
		{FlagState{Replica: true, Monitor: true, PubSub: true, Multi: true, NoEvict: true, NoTouch: true}, false, "SOPxeT"},
		{FlagState{PubSub: true, NoTouch: true}, true, "PbT"},
		{FlagState{NoEvict: true}, true, "be"},
	} {
		if got := string(AppendFlags(nil, Flags(c.f), c.blocked)); got != c.want {
			t.Errorf("%+v blocked %v: %q, want %q", c.f, c.blocked, got, c.want)
		}
	}
}

func TestLine(t *testing.T) {
	sn := &Snap{DB: 3, Proto: 3, Name: "worker", LibName: "go-redis", LibVer: "9.7", User: "alice",
		Flags: "P", Multi: -1, Sub: 2, PSub: 1}
	c := Conn{ID: 12, Addr: "10.0.0.5:51000", Laddr: "10.0.0.1:6379", Fd: 17,
		Since: t0.Add(-90 * time.Second), LastActive: t0.Add(-5 * time.Second), Blocked: true, Omem: 42, Cmd: "client|list"}
	want := "id=12 addr=10.0.0.5:51000 laddr=10.0.0.1:6379 fd=17 name=worker age=90 idle=5 flags=Pb db=3 " +
		"sub=2 psub=1 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 " +
		"obl=0 oll=0 omem=42 tot-mem=0 events=r cmd=client|list user=alice redir=-1 resp=3 " +
		"lib-name=go-redis lib-ver=9.7 tot-net-in=0 tot-net-out=0 tot-cmds=0\n"
	if got := string(AppendLine(nil, sn, c, t0)); got != want {
		t.Fatalf("line\n got %q\nwant %q", got, want)
	}
	// A clock read before the last command does not make idle negative.
	c.LastActive = t0.Add(time.Second)
	if got := string(AppendLine(nil, sn, c, t0)); !strings.Contains(got, " idle=0 ") {
		t.Fatalf("idle after a later command: %q", got)
	}
}

// The line has Valkey's fields in Valkey's order: those of a real
// valkey-server's CLIENT INFO.
func TestLineFieldsAsValkey(t *testing.T) {
	srv := valkeytest.Start(t)
	r := valkeytest.Dial(t, srv.Addr, 2).Do(t, "CLIENT", "INFO")
	_, text, ok := bytes.Cut(r, []byte("\r\n"))
	if !ok {
		t.Fatalf("CLIENT INFO: %q", r)
	}
	keys := func(line string) []string {
		var out []string
		for _, f := range strings.Fields(line) {
			k, _, _ := strings.Cut(f, "=")
			out = append(out, k)
		}
		return out
	}
	want := keys(strings.TrimSpace(string(text)))
	got := keys(string(AppendLine(nil, &Snap{Flags: "N"}, Conn{Cmd: "NULL"}, t0)))
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("fields\n got %v\nwant %v (valkey-server's)", got, want)
	}
}

func TestIntern(t *testing.T) {
	containers := map[string]bool{"client": true, "config": true}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "get"},
		{[]string{"Client", "LIST"}, "client|list"},
		{[]string{"client"}, "client"},
		{[]string{"set", "client", "v"}, "set"}, // not a container
		{[]string{strings.Repeat("x", 25)}, "NULL"},
	} {
		got := Intern(words(c.args...), containers)
		if *got != c.want {
			t.Errorf("%q: %q, want %q", c.args, *got, c.want)
		}
		if again := Intern(words(c.args...), containers); again != got {
			t.Errorf("%q interned twice", c.args)
		}
	}
}

func TestList(t *testing.T) {
	a := client(1, "10.0.0.1:1", Snap{})
	b := client(2, "10.0.0.2:2", Snap{Flags: "P", Sub: 1})
	r := client(3, "10.0.0.3:3", Snap{Flags: "S", Replica: true})
	all := []Client{a, b, r}
	ids := func(text []byte) string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
			f, _, _ := strings.Cut(l, " ")
			out = append(out, f)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		args    []string
		want    string // the ids listed
		errText string
	}{
		{nil, "id=1,id=2,id=3", ""},
		{[]string{"TYPE", "pubsub"}, "id=2", ""},
		{[]string{"type", "NORMAL"}, "id=1", ""},
		{[]string{"type", "slave"}, "id=3", ""},
		{[]string{"type", "master"}, "", ""},
		{[]string{"ID", "3", "1", "9"}, "id=1,id=3", ""},
		{[]string{"TYPE", "normal", "ID", "1", "2"}, "id=1", ""},
		{[]string{"TYPE", "nope"}, "", "ERR Unknown client type 'nope'"},
		{[]string{"ID", "1", "x"}, "", "ERR Invalid client ID"},
		{[]string{"ID", "0"}, "", "ERR Invalid client ID"},
		{[]string{"TYPE"}, "", "ERR syntax error"},
		{[]string{"USER", "default"}, "", "ERR syntax error"},
	} {
		text, errText := List(words(c.args...), all, t0)
		if errText != c.errText {
			t.Errorf("%q: error %q, want %q", c.args, errText, c.errText)
			continue
		}
		if c.errText == "" && ids(text) != c.want {
			t.Errorf("%q: listed %s, want %s", c.args, ids(text), c.want)
		}
	}
}

func TestKill(t *testing.T) {
	users := func(name []byte) (known, asked bool) {
		switch string(name) {
		case "alice", "default":
			return true, false
		case "later":
			return false, true
		}
		return false, false
	}
	for _, c := range []struct {
		args   []string
		reply  string
		keep   bool
		killed string // the ids aborted
	}{
		{[]string{"10.0.0.2:2"}, "+OK\r\n", true, "2"},
		{[]string{"10.0.0.1:1"}, "+OK\r\n", false, ""}, // itself: closed after the reply
		{[]string{"10.9.9.9:9"}, "-ERR No such client\r\n", true, ""},
		{[]string{"ID", "2"}, ":1\r\n", true, "2"},
		{[]string{"ID", "1"}, ":0\r\n", true, ""}, // SKIPME yes
		{[]string{"ID", "1", "SKIPME", "no"}, ":1\r\n", false, ""},
		{[]string{"TYPE", "normal", "skipme", "NO"}, ":2\r\n", false, "3"},
		{[]string{"TYPE", "pubsub"}, ":1\r\n", true, "2"},
		{[]string{"USER", "alice"}, ":1\r\n", true, "3"},
		{[]string{"USER", "nobody"}, "-ERR No such user 'nobody'\r\n", true, ""},
		{[]string{"USER", "later"}, "", true, ""}, // asked: handled again
		{[]string{"ADDR", "10.0.0.3:3"}, ":1\r\n", true, "3"},
		{[]string{"LADDR", "127.0.0.1:6380"}, ":2\r\n", true, "2,3"},
		{[]string{"MAXAGE", "150"}, ":1\r\n", true, "3"}, // connected 120s and 180s ago
		{[]string{"MAXAGE", "0"}, "-ERR maxage should be greater than 0\r\n", true, ""},
		{[]string{"MAXAGE", "x"}, "-ERR maxage is not an integer or out of range\r\n", true, ""},
		{[]string{"ID", "0"}, "-ERR client-id should be greater than 0\r\n", true, ""},
		{[]string{"TYPE", "x"}, "-ERR Unknown client type 'x'\r\n", true, ""},
		{[]string{"SKIPME", "maybe"}, "-ERR syntax error\r\n", true, ""},
		{[]string{"ID", "2", "TYPE"}, "-ERR syntax error\r\n", true, ""},
		{[]string{"NAME", "x"}, "-ERR syntax error\r\n", true, ""},
		// The first wrong filter is the error, as Valkey reads them in order.
		{[]string{"ID", "x", "USER", "nobody"}, "-ERR client-id should be greater than 0\r\n", true, ""},
		{[]string{"USER", "nobody", "ID", "x"}, "-ERR No such user 'nobody'\r\n", true, ""},
	} {
		self := client(1, "10.0.0.1:1", Snap{})
		b := client(2, "10.0.0.2:2", Snap{Flags: "P", Sub: 1})
		x := client(3, "10.0.0.3:3", Snap{User: "alice"})
		reply, keep := Kill(words(c.args...), self, []Client{self, b, x}, users, t0)
		var killed []string
		for _, y := range []*testClient{self, b, x} {
			if y.aborted {
				killed = append(killed, strconv.FormatUint(y.c.ID, 10))
			}
		}
		if string(reply) != c.reply || keep != c.keep || strings.Join(killed, ",") != c.killed {
			t.Errorf("KILL %q: %q keep %v killed [%s]; want %q keep %v killed [%s]",
				c.args, reply, keep, strings.Join(killed, ","), c.reply, c.keep, c.killed)
		}
	}
}
