package e2e_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// subFields is CLIENT LIST's subscription counts of one client.
var subFields = regexp.MustCompile(` flags=(\S+) .* sub=(\d+) psub=(\d+) ssub=(\d+) `)

// CLIENT LIST's sub, psub and ssub count a client's subscriptions exactly,
// through the proxy as directly: channels, patterns and shard channels
// apart, each UNSUBSCRIBE taken away, and an UNSUBSCRIBE without channels
// ending every subscription of its kind.
func TestClientListSubscriptionCounts(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		for _, addr := range []string{e.srv.Addr, e.addr} {
			sub, other := dialRaw(t, addr), dialRaw(t, addr)
			id := strings.TrimSpace(sub.do("CLIENT", "ID")[1:])
			counts := func() string {
				t.Helper()
				line := other.do("CLIENT", "LIST", "ID", id)
				m := subFields.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("%s: CLIENT LIST: %q", addr, line)
				}
				return m[1] + " " + m[2] + " " + m[3] + " " + m[4]
			}
			sub.send(string(redisCmd("SUBSCRIBE", "a", "b", "c")))
			for range 3 {
				sub.read()
			}
			sub.send(string(redisCmd("PSUBSCRIBE", "p1*", "p2*")))
			for range 2 {
				sub.read()
			}
			sub.send(string(redisCmd("SSUBSCRIBE", "s1")))
			sub.read()
			// Subscribing again to a channel adds nothing.
			sub.send(string(redisCmd("SUBSCRIBE", "a")))
			sub.read()
			eq(t, counts(), "P 3 2 1")
			sub.send(string(redisCmd("UNSUBSCRIBE", "b")))
			sub.read()
			eq(t, counts(), "P 2 2 1")
			sub.send(string(redisCmd("PUNSUBSCRIBE")))
			for range 2 {
				sub.read()
			}
			eq(t, counts(), "P 2 0 1")
			sub.send(string(redisCmd("UNSUBSCRIBE")))
			for range 2 {
				sub.read()
			}
			sub.send(string(redisCmd("SUNSUBSCRIBE", "s1")))
			sub.read()
			eq(t, counts(), "N 0 0 0")
			// No subscription left: out of the RESP2 subscribe context.
			eq(t, sub.do("GET", "nothing"), "$-1\r\n")
		}
	})
}

// A change the proxy answers itself (CLIENT SETNAME here; an SUNSUBSCRIBE
// of a followed shard channel is another) shows in CLIENT LIST once its
// reply has come, as in Valkey: the state is published before the reply
// leaves. With a goroutine per client the reply used to leave first, and
// a few CLIENT LISTs in a thousand, sent by another client right after,
// showed the old name.
func TestClientListAfterLocalReply(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		e := newEnv(t, o)
		a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
		id := strings.TrimSpace(strings.TrimPrefix(a.do("CLIENT", "ID"), ":"))
		stale := 0
		for i := 0; i < 2000; i++ {
			n := "n" + strconv.Itoa(i)
			eq(t, a.do("CLIENT", "SETNAME", n), "+OK\r\n")
			if r := b.do("CLIENT", "LIST", "ID", id); !strings.Contains(r, " name="+n+" ") {
				stale++
			}
		}
		if stale > 0 {
			t.Errorf("%d of 2000 CLIENT LISTs sent after SETNAME's reply showed the name before it", stale)
		}
	})
}
