package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// durability for commands queued in a transaction: with the replica
// healthy, EXEC's reply is the commands' own once the replica has them;
// with it cut off, each durable element gets the answer of its command
// alone (SET NX nil, SETNX :0, SET NX GET NOTDURABLE, a renewal or a
// script NOTDURABLE), the grants made are undone, and the other elements
// are untouched. The MGET lockproxy queues before a script for its
// counters is not in the client's reply. On main the transaction's
// acquisitions answered OK with the replica cut off, and the locks stayed.
func TestDurableTransactions(t *testing.T) {
	primary, replica := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	e.startProxy(rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    durability: {replicas: 1, timeout: 30s}\n"+
		"  - pattern: \"*:cut\"\n    durability: {replicas: 1, timeout: 200ms}\n"))
	a := dialRaw(t, e.addr)
	tx := func(cmds ...[]string) string {
		t.Helper()
		eq(t, a.do("MULTI"), "+OK\r\n")
		for _, c := range cmds {
			eq(t, a.do(c...), "+QUEUED\r\n")
		}
		return a.do("EXEC")
	}
	// Healthy: the commands' own replies, and the replica has the locks.
	eq(t, tx([]string{"SET", "t:mutex", "a", "NX", "PX", "60000"}, []string{"EVAL", obtainScript, "1", "u:mutex", "a", "60000"}, []string{"SET", "plain", "x"}),
		"*3\r\n+OK\r\n+OK\r\n+OK\r\n")
	rc := valkeytest.Dial(t, replica.Addr, 2)
	eq(t, string(rc.Do(t, "MGET", "t:mutex", "u:mutex")), "*2\r\n$1\r\na\r\n$1\r\na\r\n")
	if token(t, a, "t:mutex") == 0 || token(t, a, "u:mutex") == 0 {
		t.Fatal("the transaction's grants are not the client's")
	}
	// A lock held before the cut, to renew in a transaction after it.
	waitFor(t, 60*time.Second, "take h:cut", func() bool {
		got, err := a.readErrDo(5*time.Second, "SET", "h:cut", "h", "NX", "PX", "60000")
		return err == nil && got == "+OK\r\n"
	})
	before := metric(t, metrics(t, e), "lockproxy_grants_undone_total")

	cutOffReplica(t, primary)
	got := tx(
		[]string{"SET", "d:cut", "b", "NX", "PX", "60000"},
		[]string{"SET", "plain", "y"},
		[]string{"SETNX", "e:cut", "b"},
		[]string{"SET", "f:cut", "b", "NX", "GET"},
		[]string{"EVAL", obtainScript, "1", "s:cut", "b", "60000"},
		[]string{"PEXPIRE", "h:cut", "50000"},
		[]string{"GET", "plain"},
	)
	if !strings.HasPrefix(got, "*7\r\n$-1\r\n+OK\r\n:0\r\n-NOTDURABLE ") {
		t.Fatalf("EXEC: %q", got)
	}
	if strings.Count(got, "-NOTDURABLE ") != 3 || !strings.HasSuffix(got, "$1\r\ny\r\n") {
		t.Fatalf("EXEC: %q", got)
	}
	for _, k := range []string{"d:cut", "e:cut", "f:cut", "s:cut"} {
		waitFor(t, 10*time.Second, k+" undone on the primary", func() bool {
			got, err := valkeytest.Do(primary.Addr, "EXISTS", k)
			return err == nil && strings.TrimSpace(got) == "0"
		})
		undone(t, a, k)
	}
	eq(t, metric(t, metrics(t, e), "lockproxy_grants_undone_total"), before+4)
	// The renewal was made on the primary: the lock held before stays.
	got, _ = valkeytest.Do(primary.Addr, "GET", "h:cut")
	eq(t, strings.TrimSpace(got), "h")
	if token(t, a, "h:cut") == 0 {
		t.Fatal("the renewal lost the client's grant of h:cut")
	}
	// A transaction that does not run needs no WAIT: Valkey's answer.
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("SET", "g:cut", "b", "NX", "PX", "60000"), "+QUEUED\r\n")
	mustContain(t, a.do("SET"), "-ERR wrong number of arguments")
	mustContain(t, a.do("EXEC"), "-EXECABORT")
}
