package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// CLIENT UNBLOCK and CLIENT TRACKING ... REDIRECT name a client by the id
// CLIENT ID gave through the proxy, and act on that client as on Valkey.
// Before the fix they were forwarded with the proxy's id, which Valkey does
// not know: UNBLOCK answered 0 and left the client blocked, REDIRECT was
// refused.
func TestClientIDsForValkey(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		e := newEnv(t, o)
		blocked, r, redir := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)

		id := strings.TrimSuffix(strings.TrimPrefix(blocked.do("CLIENT", "ID"), ":"), "\r\n")
		blocked.send(string(redisCmd("BLPOP", "nolist", "0")))
		for i := 0; r.do("CLIENT", "UNBLOCK", id) != ":1\r\n"; i++ {
			if i == 100000 {
				t.Fatal("CLIENT UNBLOCK never unblocked the BLPOP")
			}
		}
		eq(t, blocked.read(), "*-1\r\n")
		mustContain(t, r.do("CLIENT", "LIST", "ID", id), " flags=N ")
		blocked.send(string(redisCmd("BLPOP", "nolist", "0")))
		for i := 0; !strings.Contains(r.do("CLIENT", "LIST", "ID", id), " flags=b "); i++ {
			if i == 100000 {
				t.Fatal("CLIENT LIST never showed the BLPOP blocked")
			}
		}
		eq(t, r.do("LPUSH", "nolist", "x"), ":1\r\n")
		eq(t, blocked.read(), "*2\r\n$6\r\nnolist\r\n$1\r\nx\r\n")
		mustContain(t, r.do("CLIENT", "LIST", "ID", id), " flags=N ")
		eq(t, r.do("CLIENT", "UNBLOCK", "999999"), ":0\r\n")
		eq(t, r.do("CLIENT", "UNBLOCK", "x"), "-ERR value is not an integer or out of range\r\n")

		rid := strings.TrimSuffix(strings.TrimPrefix(redir.do("CLIENT", "ID"), ":"), "\r\n")
		mustContain(t, redir.do("SUBSCRIBE", "__redis__:invalidate"), "__redis__:invalidate")
		eq(t, r.do("CLIENT", "TRACKING", "on", "REDIRECT", rid), "+OK\r\n")
		eq(t, r.do("CLIENT", "GETREDIR"), ":"+rid+"\r\n")
		mustContain(t, r.do("CLIENT", "TRACKINGINFO"), "$8\r\nredirect\r\n:"+rid+"\r\n")
		eq(t, r.do("GET", "tk"), "$-1\r\n")
		eq(t, dialRaw(t, e.addr).do("SET", "tk", "v"), "+OK\r\n")
		eq(t, redir.read(), "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\ntk\r\n")
		mustContain(t, r.do("CLIENT", "TRACKING", "on", "REDIRECT", "999999"), "-ERR The client ID you want redirect to does not exist")
	})
}

// Once the client CLIENT TRACKING ... REDIRECT names has quit, the tracking
// client's tracking-redir-broken push and CLIENT TRACKINGINFO still name it
// by the proxy's id, as Valkey names it by its own. Before the fix both
// gave Valkey's id of its connection.
func TestTrackingRedirectBrokenNamesClient(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		e := newEnv(t, o)
		target, r, w := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
		tid := strings.TrimSuffix(strings.TrimPrefix(target.do("CLIENT", "ID"), ":"), "\r\n")
		mustContain(t, target.do("SUBSCRIBE", "__redis__:invalidate"), "__redis__:invalidate")
		mustContain(t, r.do("HELLO", "3"), "proto")
		eq(t, r.do("CLIENT", "TRACKING", "on", "REDIRECT", tid), "+OK\r\n")
		eq(t, r.do("GET", "tk"), "_\r\n")
		eq(t, w.do("SET", "tk", "v"), "+OK\r\n")
		eq(t, target.read(), "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\ntk\r\n")
		eq(t, r.do("GET", "tk"), bulk("v"))
		eq(t, target.do("QUIT"), "+OK\r\n")
		// Valkey finds the redirect gone when it next invalidates (the
		// QUIT closes the connection a moment later): re-read the key
		// until the push comes, before the GET's reply or after it.
		broken := false
		for i := 0; !broken; i++ {
			if i == 10000 {
				t.Fatal("no tracking-redir-broken")
			}
			eq(t, w.do("SET", "tk", "w"), "+OK\r\n")
			r.send(string(redisCmd("GET", "tk")))
			for {
				got := r.read()
				if strings.Contains(got, "tracking-redir-broken") {
					eq(t, got, ">2\r\n$21\r\ntracking-redir-broken\r\n:"+tid+"\r\n")
					broken = true
					continue
				}
				eq(t, got, bulk("w"))
				break
			}
		}
		info := r.do("CLIENT", "TRACKINGINFO")
		mustContain(t, info, "$8\r\nredirect\r\n:"+tid+"\r\n")
	})
}
