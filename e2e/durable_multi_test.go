package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// durableTxnRules: a generous timeout where the replica is healthy (a
// loaded machine must not fail the test), a short one where it is cut off.
const durableTxnRules = "locks:\n  - pattern: \"*:mutex\"\n    durability: {replicas: 1, timeout: 30s}\n" +
	"  - pattern: \"*:lock\"\n    durability: {replicas: 1, timeout: 200ms}\n"

// transaction runs args as one transaction through r and returns EXEC's reply.
func transaction(t *testing.T, r *raw, cmds ...[]string) string {
	t.Helper()
	eq(t, r.do("MULTI"), "+OK\r\n")
	for _, c := range cmds {
		eq(t, r.do(c...), "+QUEUED\r\n")
	}
	return r.do("EXEC")
}

// durableTransactions checks durability for commands queued in MULTI on
// the node primary (its replica cut off by cut; prefix puts the keys in
// one slot in front of a cluster): with the replica healthy a transaction
// that takes a lock by SET NX and one by script answers OK for both, and
// the replica has them; with it cut off, EXEC answers nil for the SET NX,
// NOTDURABLE for the script and for a renewal, the plain SET's OK as it
// is, and both acquisitions are undone (Valkey shows no lock).
func durableTransactions(t *testing.T, e *env, primary, replica *valkeytest.Server, prefix string, cut func()) {
	t.Helper()
	a := dialRaw(t, e.addr)
	lock, slock := prefix+"t:mutex", prefix+"s:mutex"
	// The counters' read queued before a durable script is lockproxy's
	// own: CLIENT LIST counts the client's one queued command, as Valkey.
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("EVAL", obtainScript, "1", slock, "s", "60000"), "+QUEUED\r\n")
	list := dialRaw(t, e.addr).do("CLIENT", "LIST")
	if !strings.Contains(list, " multi=1 ") || strings.Contains(list, " multi=2 ") {
		t.Fatalf("CLIENT LIST with one command queued: %q", list)
	}
	eq(t, a.do("DISCARD"), "+OK\r\n")
	eq(t, transaction(t, a, []string{"SET", lock, "tok", "NX", "PX", "60000"}, []string{"EVAL", obtainScript, "1", slock, "s", "60000"}),
		"*2\r\n+OK\r\n+OK\r\n")
	rc := valkeytest.Dial(t, replica.Addr, 2)
	rc.Do(t, "READONLY")
	// Acknowledged: the replica has both now, and the client holds them.
	eq(t, string(rc.Do(t, "GET", lock)), "$3\r\ntok\r\n")
	eq(t, string(rc.Do(t, "GET", slock)), "$1\r\ns\r\n")
	if token(t, a, lock) == 0 || token(t, a, slock) == 0 {
		t.Fatalf("the transaction's grants are not the client's")
	}
	// A lock to renew later, taken while the replica is healthy; retried
	// while a loaded machine makes the short WAIT come back empty (then
	// undone).
	held := prefix + "h:lock"
	waitFor(t, 60*time.Second, "take "+held, func() bool {
		got, err := a.readErrDo(5*time.Second, "SET", held, "h", "NX", "PX", "60000")
		return err == nil && got == "+OK\r\n"
	})
	before := metric(t, metrics(t, e), "lockproxy_grants_undone_total")

	cut()
	taken, staken, plain := prefix+"r:lock", prefix+"q:lock", prefix+"plain"
	got := transaction(t, a,
		[]string{"SET", taken, "tok", "NX", "PX", "60000"},
		[]string{"SET", plain, "x"},
		[]string{"EVAL", obtainScript, "1", staken, "s", "60000"},
		[]string{"PEXPIRE", held, "50000"})
	if !strings.HasPrefix(got, "*4\r\n$-1\r\n+OK\r\n-NOTDURABLE ") || strings.Count(got, "-NOTDURABLE ") != 2 {
		t.Fatalf("EXEC with the replica cut off: %q, want nil, OK, NOTDURABLE, NOTDURABLE", got)
	}
	for _, k := range []string{taken, staken} {
		waitFor(t, 10*time.Second, k+" undone on the primary", func() bool {
			got, err := valkeytest.Do(primary.Addr, "EXISTS", k)
			return err == nil && strings.TrimSpace(got) == "0"
		})
		// Not taken, so not held.
		undone(t, a, k)
	}
	eq(t, metric(t, metrics(t, e), "lockproxy_grants_undone_total"), before+2)
	// The plain write and the renewed lock stay.
	v, _ := valkeytest.Do(primary.Addr, "GET", plain)
	eq(t, strings.TrimSpace(v), "x")
	v, _ = valkeytest.Do(primary.Addr, "GET", held)
	eq(t, strings.TrimSpace(v), "h")
	if token(t, a, held) == 0 {
		t.Fatalf("the renewal lost the client's grant of %s", held)
	}
	// A transaction that did not run undoes nothing: EXECABORT as Valkey's.
	eq(t, a.do("MULTI"), "+OK\r\n")
	eq(t, a.do("SET", taken, "tok", "NX", "PX", "60000"), "+QUEUED\r\n")
	mustContain(t, a.do("NOSUCHCOMMAND"), "-ERR unknown command")
	mustContain(t, a.do("EXEC"), "-EXECABORT")
	// Nor one a WATCH aborted: nil, as Valkey's.
	eq(t, a.do("WATCH", plain), "+OK\r\n")
	eq(t, dialRaw(t, e.addr).do("SET", plain, "y"), "+OK\r\n")
	eq(t, transaction(t, a, []string{"SET", taken, "tok", "NX", "PX", "60000"}), "*-1\r\n")
	eq(t, metric(t, metrics(t, e), "lockproxy_grants_undone_total"), before+2)
}

// durability in MULTI, in front of one primary. On main the transaction
// answered OK for the SET NX and the script with the replica cut off,
// and the locks stayed.
func TestDurableTransactions(t *testing.T) {
	primary, replica := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	e.startProxy(rulesOptions(t, durableTxnRules))
	durableTransactions(t, e, primary, replica, "", func() { cutOffReplica(t, primary) })
}

// The same in front of a cluster: the transaction runs on the session's
// own connection to the keys' node, the WAIT behind EXEC counts that
// node's replicas, and the undo runs there.
func TestDurableTransactionsInCluster(t *testing.T) {
	ce := startClusterFailover(t, durableTxnRules, "{d}:t:mutex")
	durableTransactions(t, ce.e, ce.primary, ce.replica, "{d}:", func() { cutOffReplica(t, ce.primary) })
}

// A SET NX queued after a SELECT in a durable transaction is undone in
// the database the SELECT switched to, when the replica is cut off.
func TestDurableTransactionUndoneAfterSelect(t *testing.T) {
	primary, _ := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	e.startProxy(rulesOptions(t, durableTxnRules))
	cutOffReplica(t, primary)
	a := dialRaw(t, e.addr)
	eq(t, transaction(t, a, []string{"SELECT", "3"}, []string{"SET", "r:lock", "tok", "NX", "PX", "60000"}), "*2\r\n+OK\r\n$-1\r\n")
	pc := valkeytest.Dial(t, primary.Addr, 2)
	pc.Do(t, "SELECT", "3")
	waitFor(t, 10*time.Second, "r:lock undone in database 3", func() bool {
		return string(pc.Do(t, "EXISTS", "r:lock")) == ":0\r\n"
	})
	undone(t, a, "r:lock")
}
