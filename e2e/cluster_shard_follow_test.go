package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// A sharded subscriber keeps its channel when the channel's slot moves to
// another primary (a real migration): Valkey's unrequested sunsubscribe
// does not reach the client, messages SPUBLISHed after the move still
// do, a subscription to a channel of a slot that stayed keeps working, and
// the client's own SUNSUBSCRIBE of the followed channel gets Valkey's reply
// and ends it (CLIENT LIST counts the channel left); a RESET ends a followed
// subscription too (no message after it, no subscriber left on the node).
// RESP2 and RESP3.
func TestClusterShardSubscriberFollowsSlot(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			e, cl := clusterEnv(t, proxy.Options{})
			m := slotMap(t, cl)
			ch := "{follow" + proto + "}news"
			slot := int(cluster.Slot([]byte(ch)))
			src, _ := m.Primary(uint16(slot))
			stay := keysOn(m, src, "stay"+proto+":", 1)[0]
			var dst *valkeytest.Server
			for _, p := range m.Primaries {
				if p != src {
					dst = cl.ByAddr(p)
					break
				}
			}
			sub, pub, quitter := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
			head := "*3\r\n"
			if proto == "3" {
				sub.do("HELLO", "3")
				quitter.do("HELLO", "3")
				head = ">3\r\n"
			}
			id := strings.TrimSuffix(strings.TrimPrefix(sub.do("CLIENT", "ID"), ":"), "\r\n")
			eq(t, sub.do("SSUBSCRIBE", ch), head+bulk("ssubscribe")+bulk(ch)+":1\r\n")
			eq(t, sub.do("SSUBSCRIBE", stay), head+bulk("ssubscribe")+bulk(stay)+":2\r\n")
			eq(t, quitter.do("SSUBSCRIBE", ch), head+bulk("ssubscribe")+bulk(ch)+":1\r\n")
			eq(t, pub.do("SPUBLISH", ch, "before"), ":2\r\n")
			eq(t, sub.read(), head+bulk("smessage")+bulk(ch)+bulk("before"))
			eq(t, quitter.read(), head+bulk("smessage")+bulk(ch)+bulk("before"))

			if err := cl.MigrateSlot(slot, dst, nil); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := cl.MigrateSlot(slot, cl.ByAddr(src), nil); err != nil {
					t.Error(err)
				}
			}()
			// The proxy's subscription on the new primary may take a
			// moment: publish until one subscriber is counted there.
			deadline := time.Now().Add(2 * time.Minute)
			for pub.do("SPUBLISH", ch, "probe") != ":2\r\n" {
				if time.Now().After(deadline) {
					t.Fatal("no subscriber of the moved channel on its new primary")
				}
				time.Sleep(20 * time.Millisecond)
			}
			eq(t, pub.do("SPUBLISH", ch, "after"), ":2\r\n")
			probe := head + bulk("smessage") + bulk(ch) + bulk("probe")
			for _, c := range []*raw{sub, quitter} {
				m := c.read()
				for m == probe {
					m = c.read()
				}
				eq(t, m, head+bulk("smessage")+bulk(ch)+bulk("after"))
			}
			// RESET ends the followed subscription at once: no more
			// messages, and no subscriber of the proxy's left for it.
			eq(t, quitter.do("RESET"), "+RESET\r\n")
			eq(t, pub.do("SPUBLISH", ch, "after reset"), ":1\r\n")
			eq(t, sub.read(), head+bulk("smessage")+bulk(ch)+bulk("after reset"))
			if r, err := quitter.readErr(200 * time.Millisecond); err == nil {
				t.Errorf("a message after RESET: %q", r)
			}
			if n := infoInt(t, pub.do("INFO", "lockproxy"), "cluster_shard_subscriptions_followed"); n == 0 {
				t.Errorf("cluster_shard_subscriptions_followed is 0 after a followed move")
			}
			eq(t, pub.do("SPUBLISH", stay, "still"), ":1\r\n")
			eq(t, sub.read(), head+bulk("smessage")+bulk(stay)+bulk("still"))
			eq(t, sub.do("SUNSUBSCRIBE", ch), head+bulk("sunsubscribe")+bulk(ch)+":1\r\n")
			// CLIENT LIST counts the shard channel left, as the reply did.
			mustContain(t, pub.do("CLIENT", "LIST", "ID", id), " ssub=1 ")
			if got := pub.do("SPUBLISH", ch, "gone"); got != ":0\r\n" {
				t.Errorf("SPUBLISH after SUNSUBSCRIBE: %q, want :0", got)
			}
			if r, err := sub.readErr(200 * time.Millisecond); err == nil {
				t.Errorf("the subscriber got %q after its SUNSUBSCRIBE", r)
			} else if !strings.Contains(err.Error(), "timeout") {
				t.Fatal(err)
			}
		})
	}
}
