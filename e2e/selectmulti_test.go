package e2e_test

import (
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// A SELECT queued in a transaction takes effect when EXEC runs it, as on
// Valkey: afterwards CLIENT INFO says the new database, and the session's
// commands (the lock rules' included) go there. Before the fix the proxy
// skipped a SELECT inside MULTI, and CLIENT INFO said db=0 after EXEC while
// the commands landed in db 1.
func TestSelectInMultiAtExec(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		e := newEnv(t, o)
		r := dialRaw(t, e.addr)
		eq(t, r.do("MULTI"), "+OK\r\n")
		eq(t, r.do("SELECT", "1"), "+QUEUED\r\n")
		eq(t, r.do("SET", "in", "x"), "+QUEUED\r\n")
		eq(t, r.do("EXEC"), "*2\r\n+OK\r\n+OK\r\n")
		mustContain(t, r.do("CLIENT", "INFO"), " db=1 ")
		eq(t, r.do("SET", "after", "y"), "+OK\r\n")
		d := dialRaw(t, e.srv.Addr)
		eq(t, d.do("SELECT", "1"), "+OK\r\n")
		eq(t, d.do("MGET", "in", "after"), "*2\r\n"+bulk("x")+bulk("y"))
		// A SELECT Valkey refuses at EXEC changes nothing.
		eq(t, r.do("MULTI"), "+OK\r\n")
		eq(t, r.do("SELECT", "99999"), "+QUEUED\r\n")
		mustContain(t, r.do("EXEC"), "-ERR DB index is out of range")
		mustContain(t, r.do("CLIENT", "INFO"), " db=1 ")
		// DISCARD: nothing ran.
		eq(t, r.do("MULTI"), "+OK\r\n")
		eq(t, r.do("SELECT", "2"), "+QUEUED\r\n")
		eq(t, r.do("DISCARD"), "+OK\r\n")
		mustContain(t, r.do("CLIENT", "INFO"), " db=1 ")
		eq(t, r.do("GET", "after"), bulk("y"))
	})
}
