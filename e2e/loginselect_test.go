package e2e_test

import (
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// A client's own login keeps the database it selected before, as on Valkey,
// for a user without the right to SELECT: its commands, its scripts'
// redis.acl_check_cmd, a transaction and a named connection act as that
// user's own connection in that database. Compared byte for byte with the
// same commands sent to Valkey directly. Before the fix every command after
// the AUTH got NOPERM for 'select': the proxy's connections for the login
// selected the database as the user.
func TestLoginKeepsDatabaseWithoutSelect(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		o.Config.Locks = rulesOptions(t, rule("rewrite")).Locks
		e := newEnv(t, o)
		d := dialRaw(t, e.srv.Addr)
		eq(t, d.do("ACL", "SETUSER", "bob", "on", ">pw", "~*", "&*", "+@all", "-select", "-client|setname"), "+OK\r\n")
		steps := [][]string{
			{"SELECT", "9"},
			{"SET", "k", "nine"},
			{"CLIENT", "SETNAME", "before"},
			{"AUTH", "bob", "pw"},
			{"GET", "k"},
			{"SELECT", "1"},
			{"EVAL", "return {redis.acl_check_cmd('get','k'), redis.acl_check_cmd('select','1')}", "0"},
			{"EVAL", "return redis.call('get','k')", "0"},
			{"CLIENT", "GETNAME"},
			{"ACL", "WHOAMI"},
			{"MULTI"},
			{"INCR", "n"},
			{"EXEC"},
			{"SET", "a:lock", "tok", "NX", "PX", "10000"},
			{"GET", "a:lock"},
			{"DEL", "a:lock"},
		}
		run := func(addr string) []string {
			r := dialRaw(t, addr)
			var out []string
			for _, s := range steps {
				out = append(out, r.do(s...))
			}
			return out
		}
		direct := run(e.srv.Addr)
		eq(t, d.do("FLUSHALL"), "+OK\r\n")
		proxied := run(e.addr)
		for i := range steps {
			if direct[i] != proxied[i] {
				t.Errorf("%v: directly %q, through lockproxy %q", steps[i], direct[i], proxied[i])
			}
		}
	})
}
