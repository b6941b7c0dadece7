package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// In a cluster, SCRIPT KILL and FUNCTION KILL reach every primary: a script
// looping on a key of a primary other than the proxy's configured upstream
// is killed through the proxy, while a third client keeps working on
// another shard. The answer is Valkey's one_succeeded fold: +OK when one
// primary killed it, NOTBUSY when none runs a script.
func TestClusterScriptKillEveryPrimary(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	var busy, calm string
	for _, p := range m.Primaries {
		switch {
		case p != e.srv.Addr && busy == "":
			busy = p
		case calm == "" && p != busy:
			calm = p
		}
	}
	if busy == "" || calm == "" {
		t.Fatalf("need two primaries besides each other, have %v (upstream %s)", m.Primaries, e.srv.Addr)
	}
	// Valkey reads other connections during a script only past this.
	if _, err := valkeytest.Do(busy, "CONFIG", "SET", "busy-reply-threshold", "50"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = valkeytest.Do(busy, "CONFIG", "SET", "busy-reply-threshold", "5000") })
	busyKey, calmKey := keysOn(m, busy, "kill:", 1)[0], keysOn(m, calm, "kill:", 1)[0]
	killer, third := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, killer.do("SCRIPT", "KILL"), "-NOTBUSY No scripts in execution right now.\r\n")
	eq(t, killer.do("FUNCTION", "KILL"), "-NOTBUSY No scripts in execution right now.\r\n")
	eq(t, third.do("SET", calmKey, "before"), "+OK\r\n")

	for _, kill := range []string{"SCRIPT", "FUNCTION"} {
		t.Run(kill, func(t *testing.T) {
			runner := dialRaw(t, e.addr)
			if kill == "FUNCTION" {
				eq(t, runner.do("FUNCTION", "LOAD", "REPLACE", "#!lua name=spinc\nredis.register_function('spinc', function() while true do end end)"), bulk("spinc"))
				runner.send(string(redisCmd("FCALL", "spinc", "1", busyKey)))
			} else {
				runner.send(string(redisCmd("EVAL", "while true do end", "1", busyKey)))
			}
			// The script holds its primary (it answers BUSY); the other
			// shard answers the third client as ever.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				r, _ := valkeytest.Do(busy, "PING")
				if strings.HasPrefix(r, "BUSY") || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			eq(t, third.do("SET", calmKey, kill), "+OK\r\n")
			eq(t, third.do("GET", calmKey), bulk(kill))
			eq(t, killer.do(kill, "KILL"), "+OK\r\n")
			mustContain(t, runner.read(), "-ERR Script killed by user with ")
			eq(t, runner.do("GET", busyKey), "$-1\r\n")
			eq(t, third.do("GET", calmKey), bulk(kill))
		})
	}
}
