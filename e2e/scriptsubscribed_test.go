package e2e_test

import (
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// A script on a RESP3 connection that is subscribed runs as on Valkey,
// under the monitor while a lock rule is active: its reply, then the
// messages it published to the client itself (Valkey's unit/pubsub
// "publish to self inside script"); under RESP2 Valkey's own refusal.
// Before the fix the proxy refused it as a lock command on a subscribed
// connection (LOCKED).
func TestScriptOnSubscribedConnection(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		e := newEnv(t, o)
		script := `redis.call("ping","abc")
redis.call("publish","foo","bar")
redis.call("publish","foo","vaz")
redis.call("ping","def")
return "bla"`
		run := func(addr string) []string {
			c := dialRaw(t, addr)
			c.do("HELLO", "3")
			got := []string{c.do("SUBSCRIBE", "foo")}
			got = append(got, c.do("EVAL", script, "0"), c.read(), c.read())
			c2 := dialRaw(t, addr)
			c2.do("SUBSCRIBE", "foo")
			return append(got, c2.do("EVAL", script, "0"))
		}
		want := run(e.srv.Addr)
		mustContain(t, want[1]+want[2]+want[3], bulk("bla")) // Redis 7.0 sends the messages first
		got := run(e.addr)
		for i := range want {
			eq(t, got[i], want[i])
		}
	})
}
