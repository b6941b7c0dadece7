package clients

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

func TestTrackingRedirect(t *testing.T) {
	clientsByID := map[int64]bool{7: true, 8: true}
	for _, c := range []struct {
		args      string
		at        int
		valkeyErr bool
		errText   string
	}{
		{"CLIENT TRACKING ON", 0, false, ""},
		{"CLIENT TRACKING on REDIRECT 7", 4, false, ""},
		{"CLIENT TRACKING ON PREFIX redirect BCAST REDIRECT 8", 7, false, ""}, // a prefix named redirect
		{"CLIENT TRACKING ON REDIRECT 7 REDIRECT 8", 6, false, ""},            // the last one
		{"CLIENT TRACKING ON REDIRECT 9", 0, false, errTrackingNoRedirect},
		{"CLIENT TRACKING ON REDIRECT 0", 0, false, errTrackingNoRedirect},
		{"CLIENT TRACKING ON REDIRECT 7 REDIRECT 9", 0, false, errTrackingNoRedirect},
		{"CLIENT TRACKING ON REDIRECT x", 0, true, ""},
		{"CLIENT TRACKING ON REDIRECT", 0, false, ""}, // Valkey's syntax error, later
		{"CLIENT TRACKING OFF REDIRECT 9", 0, false, ""},
	} {
		at, valkeyErr, errText := TrackingRedirect(words(strings.Fields(c.args)...),
			func(id int64) bool { return clientsByID[id] })
		if at != c.at || valkeyErr != c.valkeyErr || errText != c.errText {
			t.Errorf("%s: %d %v %q; want %d %v %q", c.args, at, valkeyErr, errText, c.at, c.valkeyErr, c.errText)
		}
	}
}

func TestTrackingHas(t *testing.T) {
	args := words(strings.Fields("CLIENT TRACKING ON REDIRECT optin PREFIX bcast OPTOUT noloop")...)
	for opt, want := range map[string]bool{"optin": false, "bcast": false, "optout": true, "noloop": true, "redirect": true, "on": false} {
		if got := TrackingHas(args, opt); got != want {
			t.Errorf("%s: %v, want %v", opt, got, want)
		}
	}
}

func TestTrackingCommand(t *testing.T) {
	args := words(strings.Fields("client tracking on REDIRECT 7 BCAST")...)
	if got := strings.Join(TrackingCommand(args, 4, 1234), " "); got != "client tracking on REDIRECT 1234 BCAST" {
		t.Errorf("with a relay: %q", got)
	}
	if got := strings.Join(TrackingCommand(args[:3], 0, 0), " "); got != "client tracking on" {
		t.Errorf("without REDIRECT: %q", got)
	}
}

func TestInvalidation(t *testing.T) {
	push := []byte(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n")
	flush := []byte(">2\r\n$10\r\ninvalidate\r\n_\r\n")
	message := "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
	for _, c := range []struct {
		push       []byte
		proto      int
		subscribed bool
		want       string
	}{
		{push, 3, false, string(push)},
		{push, 2, true, message + "*1\r\n$1\r\nk\r\n"},
		{push, 2, false, ""},
		{flush, 2, true, message + "_\r\n"},
		{[]byte(">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n"), 3, true, ""}, // not an invalidation
	} {
		if got := string(Invalidation(c.push, c.proto, c.subscribed)); got != c.want {
			t.Errorf("%q to RESP%d (subscribed %v): %q, want %q", c.push, c.proto, c.subscribed, got, c.want)
		}
	}
}

// openRelay opens a relay connection to srv as the proxy does: RESP3, its
// CLIENT ID asked before its reader starts; its pushes go to pushes.
func openRelay(t *testing.T, srv *valkeytest.Server, pushes chan []byte) (*upstream.Conn, int64) {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(resp.AppendCommandStrings(nil, "HELLO", "3")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := upstream.ReadReply(nc, nil); err != nil {
		t.Fatal(err)
	}
	id, err := AskID(nc, 5*time.Second)
	if err != nil || id <= 0 {
		t.Fatalf("AskID: %d, %v", id, err)
	}
	var wg sync.WaitGroup
	host := &upstream.Host{WG: &wg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		RoundTrip: func([]upstream.Pend) {}, Failed: func(string, error, int) {},
		LostText: func(string, error, bool) string { return "UPSTREAM lost" }}
	c := upstream.New(host, nc, srv.Addr, nil, func(p []byte) { pushes <- append([]byte(nil), p...) })
	c.Start()
	t.Cleanup(func() { c.Close(); wg.Wait() })
	return c, id
}

// A relay against a real Valkey: AskID gives the id REDIRECT names, and
// the relay's reader gets the invalidations.
func TestRelay(t *testing.T) {
	srv := valkeytest.Start(t)
	pushes := make(chan []byte, 4)
	_, id := openRelay(t, srv, pushes)
	tracker := valkeytest.Dial(t, srv.Addr, 2)
	if r := tracker.Do(t, "CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(id, 10)); string(r) != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING ON REDIRECT %d: %q", id, r)
	}
	tracker.Do(t, "GET", "k")
	valkeytest.Dial(t, srv.Addr, 2).Do(t, "SET", "k", "v")
	select {
	case p := <-pushes:
		if got := string(Invalidation(p, 3, false)); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n" {
			t.Fatalf("relayed %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no invalidation reached the relay")
	}
}

// Two clients redirecting to one target share its relay on a node and
// login; the relay closes when the last lets go of it, or when the target
// quits, after which a new relay is closed at once.
func TestTrackingRelays(t *testing.T) {
	srv := valkeytest.Start(t)
	pushes := make(chan []byte, 4)
	target := &Target{ID: 7}
	a := &Tracking{On: true, RedirectAt: 4, Target: target}
	b := &Tracking{On: true, RedirectAt: 4, Target: target}
	if a.RelayOn(srv.Addr, "") != nil {
		t.Fatal("a relay before any was opened")
	}
	c, id := openRelay(t, srv, pushes)
	r := &Relay{C: c, ID: id, Node: srv.Addr}
	a.AddRelay(r)
	if a.RelayOn(srv.Addr, "") != r || b.RelayOn(srv.Addr, "") != r {
		t.Fatal("the relay is not a's own and shared with b")
	}
	if b.RelayOn(srv.Addr, "alice") != r {
		t.Fatal("b's relay on the node, its own now, is not returned for another login")
	}
	if (&Tracking{Target: target}).RelayOn(srv.Addr, "alice") != nil {
		t.Fatal("a relay of another login was shared")
	}
	a.CloseRelays()
	if c.Dead() {
		t.Fatal("closed while b still uses it")
	}
	b.CloseRelays()
	if !c.Dead() {
		t.Fatal("open after both let go of it")
	}

	c2, id2 := openRelay(t, srv, pushes)
	a.Relays = nil
	a.AddRelay(&Relay{C: c2, ID: id2, Node: srv.Addr})
	target.End()
	if !c2.Dead() {
		t.Fatal("the relay is open after its target quit")
	}
	c3, id3 := openRelay(t, srv, pushes)
	a.AddRelay(&Relay{C: c3, ID: id3, Node: srv.Addr})
	if !c3.Dead() {
		t.Fatal("a relay to a target that quit stays open")
	}
}
