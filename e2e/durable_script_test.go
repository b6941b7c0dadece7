package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/rewrite"
)

// obtainScript and extendScript are redislock's obtain and redsync's
// extend: SET NX PX, and PEXPIRE if the lock still holds the token.
const (
	obtainScript = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"
	extendScript = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end"
)

// durableScripts checks durability for scripts on the node primary (its
// replica cut off by cut): a script acquisition is answered once the
// replica has it; with the replica cut off it is answered NOTDURABLE and
// undone (Valkey shows no lock), a renewal by script answers NOTDURABLE
// and leaves the lock held before in place. prefix puts the keys in one
// slot in front of a cluster.
func durableScripts(t *testing.T, e *env, primary, replica *valkeytest.Server, prefix string, cut func()) {
	t.Helper()
	a := dialRaw(t, e.addr)
	lock, held, taken := prefix+"s:mutex", prefix+"h:cut", prefix+"s:cut"
	eq(t, a.do("EVAL", obtainScript, "1", lock, "a", "60000"), "+OK\r\n")
	rc := valkeytest.Dial(t, replica.Addr, 2)
	rc.Do(t, "READONLY")
	// Acknowledged: the replica has it now.
	eq(t, string(rc.Do(t, "GET", lock)), "$1\r\na\r\n")
	// Taken while the replica is healthy; retried while a loaded machine
	// makes the short WAIT come back empty (then undone).
	waitFor(t, 60*time.Second, "take "+held, func() bool {
		got, err := a.readErrDo(5*time.Second, "EVAL", obtainScript, "1", held, "h", "60000")
		return err == nil && got == "+OK\r\n"
	})
	before := metric(t, metrics(t, e), "lockproxy_grants_undone_total")

	cut()
	mustContain(t, a.do("EVAL", obtainScript, "1", taken, "b", "60000"), "-NOTDURABLE")
	waitFor(t, 10*time.Second, taken+" undone on the primary", func() bool {
		got, err := valkeytest.Do(primary.Addr, "EXISTS", taken)
		return err == nil && strings.TrimSpace(got) == "0"
	})
	got, _ := valkeytest.Do(primary.Addr, "HLEN", string(rewrite.RecordsKey([]byte(taken))))
	eq(t, strings.TrimSpace(got), "0")
	eq(t, metric(t, metrics(t, e), "lockproxy_grants_undone_total"), before+1)
	// Not taken, so not held: the client may not release it.
	undone(t, a, taken)

	// A renewal of a lock taken before: NOTDURABLE, the lock kept.
	mustContain(t, a.do("EVAL", extendScript, "1", held, "h", "50000"), "-NOTDURABLE")
	got, _ = valkeytest.Do(primary.Addr, "GET", held)
	eq(t, strings.TrimSpace(got), "h")
	if token(t, a, held) == 0 {
		t.Fatalf("the renewal lost the client's grant of %s", held)
	}
}

// durability and scripts, in front of one primary: redislock's obtain
// (SET NX PX inside EVAL) is answered once the replica has the lock; with
// the replica cut off it answers NOTDURABLE and the lock is not in Valkey
// afterwards. On main the script's acquisition answered OK with the
// replica cut off, and the lock stayed.
func TestDurableScriptAcquisitions(t *testing.T) {
	primary, replica := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	e.startProxy(rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    durability: {replicas: 1, timeout: 30s}\n"+
		"  - pattern: \"*:cut\"\n    durability: {replicas: 1, timeout: 200ms}\n"))
	durableScripts(t, e, primary, replica, "", func() { cutOffReplica(t, primary) })
}

// The same in front of a cluster: the WAIT counts the replicas of the
// node the script went to, and the undo runs there.
func TestDurableScriptAcquisitionsInCluster(t *testing.T) {
	const rules = "locks:\n  - pattern: \"*:mutex\"\n    durability: {replicas: 1, timeout: 30s}\n" +
		"  - pattern: \"*:cut\"\n    durability: {replicas: 1, timeout: 200ms}\n"
	ce := startClusterFailover(t, rules, "{d}:s:mutex")
	durableScripts(t, ce.e, ce.primary, ce.replica, "{d}:", func() { cutOffReplica(t, ce.primary) })
}
