package e2e_test

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// Client-side caching through the proxy (proxy/tracking.go): CLIENT
// TRACKING in front of one primary and behind the hidden face of a
// cluster, in RESP3 (pushes) and in RESP2 (REDIRECT to a subscribed
// connection).

// invalidated reads n invalidation messages from r and returns the keys
// they name, sorted; head is the bytes each starts with.
func invalidated(t *testing.T, r *raw, head string, n int) []string {
	t.Helper()
	var keys []string
	for range n {
		msg := r.read()
		if !strings.HasPrefix(msg, head) {
			t.Fatalf("want an invalidation (%q...), got %q", head, msg)
		}
		v, _, err := resp.Parse([]byte(msg[len(head):]))
		if err != nil {
			t.Fatalf("invalidation %q: %v", msg, err)
		}
		for _, k := range v.Elems {
			keys = append(keys, string(k.Str))
		}
	}
	sort.Strings(keys)
	return keys
}

const (
	pushHead    = ">2\r\n$10\r\ninvalidate\r\n"
	messageHead = "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
)

// Behind the hidden face a tracking client reads keys of every primary
// (pipelined, so replies of one node may wait for another's), each node's
// change reaches it as a RESP3 push, and its replies stay in order. On
// 99745c9 the second node's GET got CROSSSLOT (the client was pinned to
// the node of its CLIENT TRACKING).
func TestClusterTrackingEveryNode(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	keys := keysEveryPrimary(m, "trk:every:", 2)
	r := dialRaw(t, e.addr)
	r.do("HELLO", "3")
	eq(t, r.do("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	var batch []byte
	for i, k := range keys {
		eq(t, directTo(t, m, k, "SET", k, "v"+strconv.Itoa(i)), "+OK\r\n")
		batch = resp.AppendCommandStrings(batch, "GET", k)
	}
	r.send(string(batch))
	for i := range keys {
		eq(t, r.read(), bulk("v"+strconv.Itoa(i)))
	}
	for _, k := range keys {
		eq(t, directTo(t, m, k, "SET", k, "changed"), "+OK\r\n")
	}
	want := append([]string(nil), keys...)
	sort.Strings(want)
	eq(t, strings.Join(invalidated(t, r, pushHead, len(keys)), " "), strings.Join(want, " "))
	// Still in step: a command's reply after the pushes.
	eq(t, r.do("GET", keys[len(keys)-1]), bulk("changed"))
	// RESET ends tracking on every node's connection, as on Valkey's one.
	for _, k := range keys {
		r.do("GET", k)
	}
	eq(t, r.do("RESET"), "+RESET\r\n")
	for _, k := range keys {
		eq(t, directTo(t, m, k, "SET", k, "after-reset"), "+OK\r\n")
	}
	eq(t, r.do("PING"), "+PONG\r\n") // RESP2 now, and no push before it
	eq(t, r.do("CLIENT", "TRACKINGINFO"), "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n")
}

// OPTIN: CLIENT CACHING YES applies to the command after it, on whichever
// node that runs, as valkey-go sends it (CLIENT CACHING YES, MULTI, PTTL,
// GET, EXEC); a key read without it is not tracked.
func TestClusterTrackingOptin(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	keys := keysEveryPrimary(m, "trk:optin:", 1)
	r := dialRaw(t, e.addr)
	r.do("HELLO", "3")
	eq(t, r.do("CLIENT", "TRACKING", "ON", "OPTIN"), "+OK\r\n")
	eq(t, r.do("GET", keys[0]), "_\r\n") // not tracked
	for _, k := range keys[1:] {
		var b []byte
		for _, c := range [][]string{{"CLIENT", "CACHING", "YES"}, {"MULTI"}, {"PTTL", k}, {"GET", k}, {"EXEC"}} {
			b = resp.AppendCommandStrings(b, c...)
		}
		r.send(string(b))
		for _, want := range []string{"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n:-2\r\n_\r\n"} {
			eq(t, r.read(), want)
		}
	}
	eq(t, r.do("CLIENT", "CACHING", "maybe"), "-ERR syntax error\r\n")
	eq(t, r.do("CLIENT", "CACHING", "NO"), "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n")
	// The untracked key changes first: the first push names a tracked one.
	for _, k := range keys {
		eq(t, directTo(t, m, k, "SET", k, "x"), "+OK\r\n")
	}
	want := append([]string(nil), keys[1:]...)
	sort.Strings(want)
	eq(t, strings.Join(invalidated(t, r, pushHead, len(keys)-1), " "), strings.Join(want, " "))
	eq(t, r.do("PING"), "+PONG\r\n") // no push left for the untracked key
}

// BCAST: a prefix's changes on every node reach the client, though it read
// nothing there.
func TestClusterTrackingBcast(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	keys := keysEveryPrimary(m, "trk:bc:", 1)
	r := dialRaw(t, e.addr)
	r.do("HELLO", "3")
	eq(t, r.do("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "trk:bc:"), "+OK\r\n")
	for _, k := range keys {
		eq(t, directTo(t, m, k, "SET", k, "x"), "+OK\r\n")
	}
	want := append([]string(nil), keys...)
	sort.Strings(want)
	eq(t, strings.Join(invalidated(t, r, pushHead, len(keys)), " "), strings.Join(want, " "))
}

// RESP2: CLIENT TRACKING ON REDIRECT names a subscribed client of the
// proxy by its CLIENT ID; invalidations of every node reach it as
// __redis__:invalidate messages. On 99745c9 the proxy's id went to Valkey
// as it was: the redirect named no connection there.
func TestClusterTrackingRedirect(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	keys := keysEveryPrimary(m, "trk:redir:", 1)
	sub := dialRaw(t, e.addr)
	id := strings.TrimSuffix(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"), "\r\n")
	mustContain(t, sub.do("SUBSCRIBE", "__redis__:invalidate"), "subscribe")
	r := dialRaw(t, e.addr)
	eq(t, r.do("CLIENT", "TRACKING", "ON", "REDIRECT", "999999"), "-ERR The client ID you want redirect to does not exist\r\n")
	eq(t, r.do("CLIENT", "TRACKING", "ON", "REDIRECT", id), "+OK\r\n")
	eq(t, r.do("CLIENT", "GETREDIR"), ":"+id+"\r\n")
	for _, k := range keys {
		eq(t, r.do("GET", k), "$-1\r\n")
	}
	for _, k := range keys {
		eq(t, directTo(t, m, k, "SET", k, "x"), "+OK\r\n")
	}
	want := append([]string(nil), keys...)
	sort.Strings(want)
	eq(t, strings.Join(invalidated(t, sub, messageHead, len(keys)), " "), strings.Join(want, " "))
	eq(t, r.do("CLIENT", "TRACKING", "OFF"), "+OK\r\n")
	eq(t, r.do("CLIENT", "GETREDIR"), ":-1\r\n")
}

// In front of one primary, REDIRECT's invalidations are the bytes Valkey
// sends when the clients connect directly: RESP2 messages to a subscriber,
// RESP3 pushes to a RESP3 client. On 99745c9 the proxy's CLIENT ID went to
// Valkey unchanged.
func TestTrackingRedirectDifferential(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	run := func(addr, key string, proto3 bool) string {
		target := dialRaw(t, addr)
		if proto3 {
			target.do("HELLO", "3")
		}
		id := strings.TrimSuffix(strings.TrimPrefix(target.do("CLIENT", "ID"), ":"), "\r\n")
		if !proto3 {
			target.do("SUBSCRIBE", "__redis__:invalidate")
		}
		r := dialRaw(t, addr)
		eq(t, r.do("CLIENT", "TRACKING", "ON", "REDIRECT", id), "+OK\r\n")
		r.do("GET", key)
		e.direct().Set(ctx, key, "x", 0)
		got := target.read()
		r.do("GET", key)
		e.direct().FlushAll(ctx)
		return got + target.read()
	}
	for _, proto3 := range []bool{false, true} {
		direct := run(e.srv.Addr, "trk:diff", proto3)
		eq(t, run(e.addr, "trk:diff", proto3), direct)
	}
}

// An invalidation that comes on one node's connection after a reply still
// held for its turn (another node's reply is due first) reaches the client
// after that reply, not before: otherwise the client would cache the value
// the invalidation is about for good. Node A is stopped (SIGSTOP)
// so that GET a's reply is due first and GET b's is held; b then changes.
func TestClusterTrackingPushAfterHeldReply(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	a := keysOn(m, m.Primaries[0], "trk:held:", 1)[0]
	b := keysOn(m, m.Primaries[1], "trk:held:", 1)[0]
	eq(t, directTo(t, m, a, "SET", a, "va"), "+OK\r\n")
	eq(t, directTo(t, m, b, "SET", b, "vb"), "+OK\r\n")
	r := dialRaw(t, e.addr)
	r.do("HELLO", "3")
	eq(t, r.do("CLIENT", "TRACKING", "ON"), "+OK\r\n")
	eq(t, r.do("GET", a), bulk("va")) // the session's connections on both nodes are open
	eq(t, r.do("GET", b), bulk("vb"))
	eq(t, r.do("GET", a), bulk("va"))
	nodeB := valkeytest.Dial(t, m.Primaries[1], 2)
	tracked := func() int {
		info := string(nodeB.Do(t, "INFO", "stats"))
		i := strings.Index(info, "tracking_total_keys:")
		n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(info[i+len("tracking_total_keys:"):], "\r\n", 2)[0]))
		return n
	}
	eq(t, directTo(t, m, b, "SET", b, "vb2"), "+OK\r\n") // b's tracking is spent
	eq(t, r.read(), pushHead+"*1\r\n"+bulk(b))
	before := tracked()

	var nodeA *valkeytest.Server
	for _, n := range cl.Nodes {
		if n.Addr == m.Primaries[0] {
			nodeA = n
		}
	}
	whileStopped(t, nodeA, func() {
		r.send(string(resp.AppendCommandStrings(resp.AppendCommandStrings(nil, "GET", a), "GET", b)))
		for tracked() <= before { // node B ran GET b: its reply is in the proxy, held behind a's
			time.Sleep(time.Millisecond)
		}
		eq(t, directTo(t, m, b, "SET", b, "vb3"), "+OK\r\n")
		// The push comes on B's connection now; a's reply cannot.
		eq(t, string(nodeB.Do(t, "PING")), "+PONG\r\n")
	})
	eq(t, r.read(), bulk("va"))
	eq(t, r.read(), bulk("vb2"))
	eq(t, r.read(), pushHead+"*1\r\n"+bulk(b))
}
