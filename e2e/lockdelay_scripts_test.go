package e2e_test

import (
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/libscripts"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// A lock taken inside a client's script gets what SET NX gets under a
// rule's max_lease (issue 29, item 3): a lease longer than max_lease, or
// none, in the call that takes the lock is refused (LEASE); after a
// primary restarted without persistence (the holder's grant lost with
// it) the lock is not granted within max_lease: a SET NX inside a script
// answers as for a lock held by someone else (redislock's obtain: not
// obtained), and a call with no such answer (SET without NX) is refused
// (LOCKDELAY). Nothing is written. On main a script's acquisition was
// neither bounded nor delayed (the first LEASE check failed: +OK).
func TestLockDelayForScriptsAfterRestart(t *testing.T) {
	srv := valkeytest.Start(t)
	e := &env{t: t, srv: srv}
	e.startProxy(rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    max_lease: 1m\n"))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	d := e.direct()
	const lock = "sdelay:mutex"
	for _, body := range []string{
		"return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 60001)",
		"return redis.call('SET', KEYS[1], ARGV[1], 'NX')",
		"return redis.call('SETNX', KEYS[1], ARGV[1])",
		"return redis.call('SET', KEYS[1], ARGV[1], 'EX', 61)",
		"return redis.pcall('HINCRBY', KEYS[1], ARGV[1], 1)",
	} {
		mustContain(t, a.do("EVAL", body, "1", lock, "a"), "-LEASE lockproxy refused ")
	}
	eq(t, d.Exists(ctx, lock).Val(), int64(0))
	eq(t, a.do("EVAL", libscripts.RedislockObtain, "1", lock, "a", "1", "50000"), "+OK\r\n")
	srv.Restart(t) // A's grant is lost
	// redislock's obtain: its SET NX answers as for a held lock, and
	// its GETRANGE finds no "a" prefix: not obtained.
	eq(t, retryUpstream(t, b, "EVAL", libscripts.RedislockObtain, "1", lock, "b", "1", "50000"), "$-1\r\n")
	eq(t, b.do("EVAL", "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 1000) == false", "1", lock, "b"), ":1\r\n")
	eq(t, b.do("EVAL", "redis.setresp(3) return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 1000) == nil", "1", lock, "b"), ":1\r\n")
	mustContain(t, b.do("EVAL", "return redis.call('SET', KEYS[1], ARGV[1], 'PX', 1000)", "1", lock, "b"), "-LOCKDELAY lockproxy refused SET of \"sdelay:mutex\" inside a script: ")
	eq(t, b.do("SET", lock, "b", "NX", "PX", "1000"), "$-1\r\n") // the plain form agrees
	eq(t, d.Exists(ctx, lock).Val(), int64(0))
	eq(t, b.do("LOCKPROXY", "FENCE", lock), "$-1\r\n")
	// A key no max_lease rule covers is not delayed.
	eq(t, b.do("EVAL", "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 1000)", "1", "free:key", "b"), "+OK\r\n")
}

// The same in front of a cluster, where the delay is kept per hash slot:
// A takes the lock by redislock's obtain (replicated), the replica is cut
// off, A releases and B takes it for 15 s by the same script (never
// replicated), the primary is killed and the replica promoted. C's
// obtain is not obtained until B's lost lease ran out. On main C's script
// took the lock as soon as the replica was promoted.
func TestLockDelayForScriptsAcrossClusterFailover(t *testing.T) {
	const lock = "{sl}:mutex"
	ce := startClusterFailover(t, "locks:\n  - pattern: \"{*}:mutex\"\n    max_lease: 15s\n", lock)
	a, b, c := dialRaw(t, ce.e.addr), dialRaw(t, ce.e.addr), dialRaw(t, ce.e.addr)
	obtain := func(r *raw, who, lease string) (string, error) {
		return r.readErrDo(5*time.Second, "EVAL", libscripts.RedislockObtain, "1", lock, who, "1", lease)
	}
	// The slot's first grant starts its mark: it waits max_lease once.
	// A's lease is short: its lock, whose release the replica does not
	// see, is gone from the replica by the time it is promoted.
	waitFor(t, 60*time.Second, "A obtains the lock", func() bool {
		got, err := obtain(a, "A", "2000")
		return err == nil && got == "+OK\r\n"
	})
	ce.waitReplicaHas(t, lock, "A")
	cutOffReplica(t, ce.primary)
	eq(t, retryUpstream(t, a, "EVAL", libscripts.RedislockRelease, "1", lock, "A"), ":1\r\n")
	eq(t, retryUpstream(t, b, "EVAL", libscripts.RedislockObtain, "1", lock, "B", "1", "15000"), "+OK\r\n")
	_, bEnd := grantTimes(t, ce.primary, lock, "B")
	ce.failOver(t)
	grantedAfter(t, ce, lock, bEnd, func() (string, error) { return obtain(c, "C", "15000") })
}
