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

// A relay against a real Valkey: AskID gives the id REDIRECT names, the
// relay's reader gets the invalidations, RedirectedHere shares it and
// closes it when the target quits.
func TestRelay(t *testing.T) {
	srv := valkeytest.Start(t)
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
	pushes := make(chan []byte, 4)
	c := upstream.New(host, nc, srv.Addr, nil, func(p []byte) { pushes <- append([]byte(nil), p...) })
	c.Start()

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

	var h RedirectedHere
	r := &Relay{C: c, ID: id, Node: srv.Addr, Login: ""}
	if !h.Add(r) {
		t.Fatal("Add refused before the target quit")
	}
	if h.Take(srv.Addr, "alice") != nil || h.Take("elsewhere:1", "") != nil {
		t.Fatal("a relay of another login or node was shared")
	}
	if h.Take(srv.Addr, "") != r {
		t.Fatal("the relay was not shared")
	}
	if h.Release(r) {
		t.Fatal("released while a second client still uses it")
	}
	h.End()
	if !c.Dead() {
		t.Fatal("the relay is open after its target quit")
	}
	if h.Add(&Relay{C: c}) {
		t.Fatal("Add accepted a relay after the target quit")
	}
	wg.Wait()
}
