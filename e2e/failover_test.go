package e2e_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Issue 29: a fencing token never repeats and never goes back, across a
// Sentinel failover that lost writes, a primary restarted without
// persistence, and a FLUSHALL the rules allow (docs/failover.md).

const mutexRule = "locks:\n  - pattern: \"*:mutex\"\n    release: rewrite\non_flush: allow\n"

// failoverFenceRule guards "{x}:data" with the lock "{x}:mutex", check:
// highest (Kleppmann's rule).
const failoverFenceRule = `locks:
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: highest
`

// token is the caller's fencing token of lock, from LOCKPROXY FENCE; 0
// when it holds no grant of it (FENCE answers nil).
func token(t *testing.T, r *raw, lock string) int64 {
	t.Helper()
	got := r.do("LOCKPROXY", "FENCE", lock)
	if got == "$-1\r\n" || got == "_\r\n" {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(got, ":"), "\r\n"), 10, 64)
	if err != nil {
		t.Fatalf("LOCKPROXY FENCE %s: %q", lock, got)
	}
	return n
}

// acquire takes lock through r, retrying while Valkey is out of reach or
// the lock is held, and returns the token it was granted.
func acquire(t *testing.T, r *raw, lock, value string, within time.Duration) int64 {
	t.Helper()
	waitFor(t, within, "acquire "+lock+" as "+value, func() bool {
		got, err := r.readErrDo(5*time.Second, "SET", lock, value, "NX", "PX", "2000")
		return err == nil && got == "+OK\r\n"
	})
	return token(t, r, lock)
}

// release deletes lock through r: 1, or 0 when its lease (2 s) ran out
// first on a loaded machine; anything else fails the test.
func release(t *testing.T, r *raw, lock string) {
	t.Helper()
	if got := retryUpstream(t, r, "DEL", lock); got != ":1\r\n" && got != ":0\r\n" {
		t.Fatalf("DEL %s: %q", lock, got)
	}
}

// replPrimaryReplica starts a primary whose replica logs in as the user
// "repl", so that the test can cut the replica off: switch that user off
// and kill its link (SIGSTOP is not enough: the kernel keeps buffering).
func replPrimaryReplica(t *testing.T) (primary, replica *valkeytest.Server) {
	t.Helper()
	return replicated(t, []string{"user repl on >replpw ~* &* +@all"}, []string{"masteruser repl", "masterauth replpw"})
}

// replicateAsRepl makes a running replica (a cluster's, started without
// the user) log in to its primary as "repl", so cutOffReplica can cut it off.
func replicateAsRepl(t *testing.T, primary, replica *valkeytest.Server) {
	t.Helper()
	for _, step := range []struct {
		srv  *valkeytest.Server
		args []string
	}{
		{primary, []string{"ACL", "SETUSER", "repl", "on", ">replpw", "~*", "&*", "+@all"}},
		{replica, []string{"CONFIG", "SET", "masteruser", "repl"}},
		{replica, []string{"CONFIG", "SET", "masterauth", "replpw"}},
		{primary, []string{"CLIENT", "KILL", "TYPE", "replica"}},
	} {
		if out, err := valkeytest.Do(step.srv.Addr, step.args...); err != nil {
			t.Fatalf("%v: %q %v", step.args, out, err)
		}
	}
	waitFor(t, 60*time.Second, "the replica is back, as repl", func() bool {
		out, _ := valkeytest.Do(primary.Addr, "CLIENT", "LIST", "TYPE", "replica")
		info, _ := valkeytest.Do(replica.Addr, "INFO", "replication")
		return strings.Contains(out, "user=repl") && strings.Contains(info, "master_link_status:up")
	})
}

func cutOffReplica(t *testing.T, primary *valkeytest.Server) {
	t.Helper()
	for _, c := range [][]string{{"ACL", "SETUSER", "repl", "off"}, {"CLIENT", "KILL", "USER", "repl"}} {
		if _, err := valkeytest.Do(primary.Addr, c...); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
	waitFor(t, 10*time.Second, "the replica's link is down", func() bool {
		info, _ := valkeytest.Do(primary.Addr, "INFO", "replication")
		return strings.Contains(info, "connected_slaves:0")
	})
}

// undone waits until an acquisition its replicas did not acknowledge is
// undone: the client is answered "not taken" at once, and the undo (a
// token-checked delete of the lock and its record) runs beside the reply
// path, so LOCKPROXY FENCE may see the grant for a moment (a loaded
// machine once saw it right after the answer).
func undone(t *testing.T, r *raw, lock string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the unacknowledged grant of "+lock+" undone", func() bool { return token(t, r, lock) == 0 })
}

// The story, on main answered with token 2 twice: A takes the
// lock (replicated), the replica is cut off, A releases and B takes it
// (token 2, never replicated), the primary is killed (SIGKILL) and
// Sentinel promotes the replica; C then takes the lock. C's token is
// above B's, and B, whose grant the failover lost, is told so: FENCE nil,
// its release NOTOWNER.
func TestTokensRiseAcrossSentinelFailover(t *testing.T) {
	sentinelBinary(t)
	primary, replica := replPrimaryReplica(t)
	ss := startSentinels(t, 3, 2, primary)
	waitFor(t, 15*time.Second, "sentinel sees the replica", func() bool { ok, _ := sentinelKnows(ss[0], replica.Port); return ok })
	waitFor(t, 15*time.Second, "sentinels know each other", func() bool { _, others := sentinelKnows(ss[0], replica.Port); return others == 2 })
	opts := rulesOptions(t, failoverFenceRule)
	opts.Upstream.Sentinel = config.SentinelConfig{Master: sentinelMaster, Addrs: []string{ss[0].addr, ss[1].addr, ss[2].addr}}
	opts.Upstream.ReconnectBackoff = config.Duration(20 * time.Millisecond)
	opts.Upstream.MaxBackoff = config.Duration(200 * time.Millisecond)
	opts.Upstream.DialTimeout = config.Duration(time.Second)
	opts.Upstream.ReplyTimeout = config.Duration(time.Second)
	e := &env{t: t, srv: primary}
	e.startProxy(opts)
	a, b, c := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)

	const lock = "{r}:mutex"
	ta := acquire(t, a, lock, "A", 10*time.Second)
	if _, err := valkeytest.Do(primary.Addr, "WAIT", "1", "5000"); err != nil {
		t.Fatal(err)
	}
	cutOffReplica(t, primary)
	release(t, a, lock)
	tb := acquire(t, b, lock, "B", 10*time.Second)
	if tb <= ta {
		t.Fatalf("B's token %d is not above A's %d", tb, ta)
	}
	eq(t, b.do("SET", "{r}:data", "B"), "+OK\r\n")
	primary.Stop() // SIGKILL
	waitFor(t, 30*time.Second, "Sentinel promotes the replica", func() bool {
		info, _ := valkeytest.Do(replica.Addr, "INFO", "replication")
		return strings.Contains(info, "role:master")
	})
	tc := acquire(t, c, lock, "C", 30*time.Second)
	t.Logf("tokens: A %d, B %d (lost in the failover), C %d", ta, tb, tc)
	if tc <= tb {
		t.Fatalf("C was granted token %d after B's %d: a token repeated or went back", tc, tb)
	}
	eq(t, c.do("SET", "{r}:data", "C"), "+OK\r\n")
	// B's grant is gone: its fenced writes are refused, FENCE answers
	// nil, its release is refused, and the grant is counted lost (once).
	mustContain(t, b.do("SET", "{r}:data", "B2"), "-UNFENCED")
	eq(t, metric(t, metrics(t, e), "lockproxy_grants_lost_total"), float64(0))
	eq(t, token(t, b, lock), int64(0))
	mustContain(t, b.do("DEL", lock), "-NOTOWNER")
	m := metrics(t, e)
	eq(t, metric(t, m, "lockproxy_grants_lost_total"), float64(1))
	eq(t, metric(t, m, "lockproxy_epoch"), float64(tc>>32))
	// The next grant keeps rising, C's release works as always.
	release(t, c, lock)
	if td := acquire(t, a, lock, "A2", 10*time.Second); td <= tc {
		t.Fatalf("token %d after %d", td, tc)
	}
}

// A primary restarted without persistence loses every counter: the next
// grant is still above every token handed out before, through either of
// two lockproxy instances, which agree on the epoch (the second does not
// raise it again). On main the grant after the restart was token 1.
func TestTokensRiseAcrossRestartWithoutPersistence(t *testing.T) {
	srv := valkeytest.Start(t)
	e1 := &env{t: t, srv: srv}
	e1.startProxy(rulesOptions(t, mutexRule))
	e2 := &env{t: t, srv: srv}
	e2.startProxy(rulesOptions(t, mutexRule))
	a, b := dialRaw(t, e1.addr), dialRaw(t, e2.addr)
	const lock = "job:mutex"
	var last int64
	for i := 0; i < 3; i++ {
		last = acquire(t, a, lock, "a", 10*time.Second)
		release(t, a, lock)
	}
	srv.Restart(t)
	t1 := acquire(t, a, lock, "a", 10*time.Second)
	release(t, a, lock)
	t2 := acquire(t, b, lock, "b", 10*time.Second)
	t.Logf("tokens: %d before the restart, then %d (instance 1), %d (instance 2)", last, t1, t2)
	if t1 <= last || t2 <= t1 {
		t.Fatalf("tokens %d, then %d, %d: not rising", last, t1, t2)
	}
	if t2>>32 != t1>>32 {
		t.Fatalf("the two instances mint under different epochs: %d and %d", t1>>32, t2>>32)
	}
}

// An instance that never handed out a token under the epoch, but opened a
// connection after it was established, is the first to grant after a
// restart without persistence: it read the epoch from the hash when it
// connected, and its grant is still above every token before. Reading
// only its own tokens, it would establish the epoch one above 0, below
// the tokens instance 1 handed out.
func TestTokensRiseThroughAnInstanceThatNeverGranted(t *testing.T) {
	srv := valkeytest.Start(t)
	e1 := &env{t: t, srv: srv}
	e1.startProxy(rulesOptions(t, mutexRule))
	a := dialRaw(t, e1.addr)
	const lock = "n:mutex"
	acquire(t, a, lock, "a", 10*time.Second)
	release(t, a, lock)
	srv.Restart(t)
	var last int64
	for i := 0; i < 2; i++ {
		last = acquire(t, a, lock, "a", 10*time.Second)
		release(t, a, lock)
	}
	if last>>32 < 1 {
		t.Fatalf("token %d after a restart: not under a raised epoch", last)
	}
	e2 := &env{t: t, srv: srv}
	e2.startProxy(rulesOptions(t, mutexRule))
	b := dialRaw(t, e2.addr)
	eq(t, b.do("GET", "unrelated"), "$-1\r\n")
	srv.Restart(t)
	if tok := acquire(t, dialRaw(t, e2.addr), lock, "b", 10*time.Second); tok <= last {
		t.Fatalf("instance 2's first grant after the restart: token %d, not above %d", tok, last)
	}
}

// FLUSHALL and FLUSHDB that on_flush: allow lets through delete the
// counters; the grants after them are still above every token before.
// On main the grant after the flush was token 1 again.
func TestTokensRiseAcrossFlush(t *testing.T) {
	e := newEnv(t, rulesOptions(t, mutexRule))
	a := dialRaw(t, e.addr)
	const lock = "f:mutex"
	var last int64
	for _, flush := range [][]string{{"FLUSHALL"}, {"FLUSHDB"}, {"FLUSHALL", "ASYNC"}} {
		for i := 0; i < 2; i++ {
			tok := acquire(t, a, lock, "a", 10*time.Second)
			if tok <= last {
				t.Fatalf("after %v: token %d, not above %d", flush, tok, last)
			}
			last = tok
			release(t, a, lock)
		}
		eq(t, a.do(flush...), "+OK\r\n")
	}
	if tok := acquire(t, a, lock, "a", 10*time.Second); tok <= last {
		t.Fatalf("after the last flush: token %d, not above %d", tok, last)
	}
}

// durability: {replicas: 1, timeout: 200ms}: an acquisition is answered
// once the replica has it; with the replica cut off, none is acknowledged:
// SET NX answers nil, SETNX :0, SET NX GET NOTDURABLE, and the lock taken
// on the primary is undone (token-checked). On main, with no durability,
// the acquisitions made while the replica was cut off answered OK.
func TestDurableGrants(t *testing.T) {
	primary, replica := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	// A generous timeout where the replica is healthy (a loaded machine
	// must not fail the test), a short one where it is cut off.
	e.startProxy(rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    durability: {replicas: 1, timeout: 30s}\n"+
		"  - pattern: \"*:cut\"\n    durability: {replicas: 1, timeout: 100ms}\n"))
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "d:mutex", "a", "NX", "PX", "60000"), "+OK\r\n")
	// Acknowledged: the replica has it now.
	got, _ := valkeytest.Do(replica.Addr, "GET", "d:mutex")
	eq(t, strings.TrimSpace(got), "a")
	eq(t, a.do("DEL", "d:mutex"), ":1\r\n")

	cutOffReplica(t, primary)
	eq(t, a.do("SET", "d:cut", "b", "NX", "PX", "60000"), "$-1\r\n")
	eq(t, a.do("SETNX", "e:cut", "b"), ":0\r\n")
	mustContain(t, a.do("SET", "f:cut", "b", "NX", "GET"), "-NOTDURABLE")
	eq(t, metric(t, metrics(t, e), "lockproxy_grants_undone_total"), float64(3))
	for _, k := range []string{"d:cut", "e:cut", "f:cut"} {
		waitFor(t, 10*time.Second, k+" undone on the primary", func() bool {
			got, err := valkeytest.Do(primary.Addr, "EXISTS", k)
			return err == nil && strings.TrimSpace(got) == "0"
		})
	}
	// Not taken, so not released: the holder has no record.
	undone(t, a, "d:cut")
}

// max_lease: 3s: longer leases, or none, are refused (LEASE); after a
// primary restarted without persistence (A's grant lost with it), nobody
// is granted the lock before A's lease would have run out (lock delay).
// On main there was no max_lease, and B was granted the lock at once.
func TestLockDelayAfterRestart(t *testing.T) {
	srv := valkeytest.Start(t)
	e := &env{t: t, srv: srv}
	e.startProxy(rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    max_lease: 3s\n"))
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	const lock = "delay:mutex"
	mustContain(t, a.do("SET", lock, "a", "NX", "PX", "3001"), "-LEASE")
	mustContain(t, a.do("SET", lock, "a", "NX"), "-LEASE")
	mustContain(t, a.do("SETNX", lock, "a"), "-LEASE")
	eq(t, a.do("SET", lock, "a", "NX", "PX", "2000"), "+OK\r\n")
	rec := e.direct().HGetAll(ctx, "{"+lock+"}:lockproxy:owners").Val()
	var aEnd int64
	for _, v := range rec {
		f := strings.Fields(v)
		aEnd, _ = strconv.ParseInt(f[2], 10, 64)
	}
	if aEnd == 0 {
		t.Fatalf("A's record: %v", rec)
	}
	srv.Restart(t) // A's grant is lost
	refused := 0
	waitFor(t, 20*time.Second, "B is granted the lock", func() bool {
		got, err := b.readErrDo(5*time.Second, "SET", lock, "b", "NX", "PX", "2000")
		if err == nil && got == "$-1\r\n" {
			refused++
		}
		return err == nil && got == "+OK\r\n"
	})
	rec = e.direct().HGetAll(ctx, "{"+lock+"}:lockproxy:owners").Val()
	var bAt int64
	for _, v := range rec {
		bAt, _ = strconv.ParseInt(strings.Fields(v)[1], 10, 64)
	}
	t.Logf("A's lease ended at %d; B was granted at %d, after %d refusals", aEnd, bAt, refused)
	if bAt < aEnd {
		t.Fatalf("B was granted the lock at %d, before A's lost lease ran out at %d", bAt, aEnd)
	}
}

// Sentinel, with durability and max_lease: while the replica is cut off no
// acquisition is acknowledged; after the primary is killed and the replica
// promoted, nothing is granted while it has no replica, nobody is granted
// A's lock before A's lease ran out, and the tokens keep rising.
func TestDurableDelayedAcrossSentinelFailover(t *testing.T) {
	sentinelBinary(t)
	primary, replica := replPrimaryReplica(t)
	ss := startSentinels(t, 3, 2, primary)
	waitFor(t, 15*time.Second, "sentinel sees the replica", func() bool { ok, _ := sentinelKnows(ss[0], replica.Port); return ok })
	waitFor(t, 15*time.Second, "sentinels know each other", func() bool { _, others := sentinelKnows(ss[0], replica.Port); return others == 2 })
	opts := rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    max_lease: 3s\n    durability: {replicas: 1, timeout: 300ms}\n")
	opts.Upstream.Sentinel = config.SentinelConfig{Master: sentinelMaster, Addrs: []string{ss[0].addr, ss[1].addr, ss[2].addr}}
	opts.Upstream.ReconnectBackoff = config.Duration(20 * time.Millisecond)
	opts.Upstream.MaxBackoff = config.Duration(200 * time.Millisecond)
	opts.Upstream.DialTimeout = config.Duration(time.Second)
	opts.Upstream.ReplyTimeout = config.Duration(time.Second)
	e := &env{t: t, srv: primary}
	e.startProxy(opts)
	a, b, c := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)

	const lock = "{s}:mutex"
	ta := acquire(t, a, lock, "A", 30*time.Second) // retried while the replica is slow to acknowledge
	recs := string(rewrite.RecordsKey([]byte(lock)))
	owners, err := valkeytest.Do(replica.Addr, "HGETALL", recs)
	if err != nil {
		t.Fatal(err)
	}
	// The record is on the replica (the acquisition was acknowledged):
	// "<grant> <acquired> <lease end> A".
	f := strings.Fields(owners)
	if len(f) < 5 || f[len(f)-1] != "A" {
		t.Fatalf("A's record on the replica: %q", owners)
	}
	aEnd, _ := strconv.ParseInt(f[len(f)-2], 10, 64)

	cutOffReplica(t, primary)
	eq(t, b.do("SET", "{s2}:mutex", "B", "NX", "PX", "3000"), "$-1\r\n") // not acknowledged: not taken
	undone(t, b, "{s2}:mutex")

	primary.Stop() // SIGKILL
	waitFor(t, 30*time.Second, "Sentinel promotes the replica", func() bool {
		info, _ := valkeytest.Do(replica.Addr, "INFO", "replication")
		return strings.Contains(info, "role:master")
	})
	// The new primary has no replica left: durability grants nothing
	// until the old primary is back (empty), as its replica.
	eq(t, retryUpstream(t, c, "SET", "{s3}:mutex", "C", "NX", "PX", "3000"), "$-1\r\n")
	primary.Restart(t)
	// Sentinel turns the old primary into the new one's replica once it
	// has seen it back for a while; under load it once had not within five
	// minutes (a Sentinel in TILT acts on nothing). What is tested here is
	// lockproxy's answer once a replica is there, so the test sends the
	// REPLICAOF Sentinel would send (Sentinel's own view agrees with it).
	if _, err := valkeytest.Do(primary.Addr, "REPLICAOF", "127.0.0.1", strconv.Itoa(replica.Port)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the old primary is the new one's replica", func() bool {
		info, _ := valkeytest.Do(replica.Addr, "INFO", "replication")
		return strings.Contains(info, "state=online")
	})
	tc := acquire(t, c, lock, "C", 30*time.Second)
	owners, _ = valkeytest.Do(replica.Addr, "HGETALL", recs)
	var cAt int64
	for _, line := range strings.Split(owners, "\n") {
		if g := strings.Fields(line); len(g) == 4 && g[3] == "C" {
			cAt, _ = strconv.ParseInt(g[1], 10, 64)
		}
	}
	t.Logf("A: token %d, lease end %d; C: token %d, granted at %d", ta, aEnd, tc, cAt)
	if cAt == 0 || cAt < aEnd {
		t.Fatalf("C was granted at %d, before A's lease ended at %d", cAt, aEnd)
	}
	if tc <= ta {
		t.Fatalf("C's token %d is not above A's %d", tc, ta)
	}
}

// Renewals and fenced writes under durability are answered once the
// replica has them, and NOTDURABLE while it is cut off.
func TestDurableRenewalsAndFencedWrites(t *testing.T) {
	primary, _ := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	// The timeout is short: the acquisition is retried until the replica
	// acknowledged it in time, and the renewal and the write before the
	// cut-off answer either their reply or NOTDURABLE, never something else.
	e.startProxy(rulesOptions(t, failoverFenceRule+"    durability: {replicas: 1, timeout: 100ms}\n"))
	a := dialRaw(t, e.addr)
	acquire(t, a, "{d}:mutex", "a", 30*time.Second)
	if got := a.do("PEXPIRE", "{d}:mutex", "50000"); got != ":1\r\n" && !strings.HasPrefix(got, "-NOTDURABLE") {
		t.Fatalf("renewal: %q", got)
	}
	if got := a.do("SET", "{d}:data", "1"); got != "+OK\r\n" && !strings.HasPrefix(got, "-NOTDURABLE") {
		t.Fatalf("fenced write: %q", got)
	}
	before := metric(t, metrics(t, e), "lockproxy_durable_writes_short_total")
	cutOffReplica(t, primary)
	mustContain(t, a.do("PEXPIRE", "{d}:mutex", "40000"), "-NOTDURABLE")
	mustContain(t, a.do("SET", "{d}:data", "2"), "-NOTDURABLE")
	eq(t, metric(t, metrics(t, e), "lockproxy_durable_writes_short_total"), before+2)
}

// Connections opened while no rule existed established no epoch: a reload
// that switches rules on reopens them, so a restart without persistence
// after it still cannot make a token go back.
func TestTokensRiseAfterReloadSwitchedRulesOn(t *testing.T) {
	e, path := fileEnv(t, "")
	r := dialRaw(t, e.addr)
	eq(t, r.do("PING"), "+PONG\r\n")
	writeFile(t, path, mutexRule)
	mustContain(t, r.do("LOCKPROXY", "RELOAD"), "reloaded")
	first := acquire(t, r, "x:mutex", "v", 10*time.Second)
	release(t, r, "x:mutex")
	e.srv.Restart(t)
	if next := acquire(t, r, "x:mutex", "v", 10*time.Second); next <= first {
		t.Fatalf("token %d after %d", next, first)
	}
}

// A 3-primary cluster with replicas: the replica of the lock's primary is
// cut off (its replication user switched off, its link killed), B is
// granted the lock there, the primary is killed (SIGKILL) and the cluster
// promotes the replica. C's token is above B's; on main it was B's again.
func TestTokensRiseAcrossClusterFailover(t *testing.T) {
	cl, err := valkeytest.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	opts := rulesOptions(t, failoverFenceRule)
	opts.Upstream.Cluster.Seeds = cl.Seeds()
	opts.Upstream.ReconnectBackoff = config.Duration(20 * time.Millisecond)
	opts.Upstream.MaxBackoff = config.Duration(200 * time.Millisecond)
	opts.Upstream.DialTimeout = config.Duration(time.Second)
	opts.Upstream.ReplyTimeout = config.Duration(time.Second)
	e := &env{t: t, srv: cl.Nodes[0]}
	e.startProxy(opts)
	a, b, c := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)

	const lock = "{c}:mutex"
	primary, err := cl.Primary(int(cluster.Slot([]byte(lock))))
	if err != nil {
		t.Fatal(err)
	}
	replica, err := cl.ReplicaOf(primary)
	if err != nil {
		t.Fatal(err)
	}
	replicateAsRepl(t, primary, replica)
	ta := acquire(t, a, lock, "A", 20*time.Second)
	rc := valkeytest.Dial(t, replica.Addr, 2)
	rc.Do(t, "READONLY")
	var got []byte
	waitFor(t, 10*time.Second, "the replica has A's lock", func() bool {
		got = rc.Do(t, "GET", lock)
		return string(got) == "$1\r\nA\r\n"
	})
	cutOffReplica(t, primary)
	release(t, a, lock)
	tb := acquire(t, b, lock, "B", 10*time.Second)
	if tb <= ta {
		t.Fatalf("B's token %d is not above A's %d", tb, ta)
	}
	primary.Stop() // SIGKILL
	waitFor(t, 60*time.Second, "the cluster promotes the replica", func() bool {
		role, _ := valkeytest.Do(replica.Addr, "ROLE")
		return strings.HasPrefix(role, "master")
	})
	tc := acquire(t, c, lock, "C", 60*time.Second)
	t.Logf("tokens: A %d, B %d (lost in the failover), C %d", ta, tb, tc)
	if tc <= tb {
		t.Fatalf("C was granted token %d after B's %d: a token repeated or went back", tc, tb)
	}
	mustContain(t, b.do("SET", "{c}:data", "B"), "-UNFENCED")
	eq(t, c.do("SET", "{c}:data", "C"), "+OK\r\n")
}

// Transparency with a lock rule active (Valkey's own test suite runs
// through lockproxy so): before a lock is granted lockproxy writes nothing
// in the keyspace and makes no call that fails. Through the proxy, in db 0
// and db 9, FLUSHALL (allowed: it runs in lockproxy's flush script), then
// DBSIZE, KEYS, RANDOMKEY, SCAN and FLUSHDB answer byte for byte what a
// Valkey without lockproxy answers, and neither Valkey's keyspace nor its
// error statistics differ. On main every new upstream connection wrote the
// hash lockproxy:epoch in every database (DBSIZE 1) and added an ERR to
// errorstats, and the flush wrote the hash back.
func TestNothingWrittenBeforeAGrant(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("rewrite")+"on_flush: allow\n"))
	plain := valkeytest.Start(t)
	run := func(addr string) []string {
		var out []string
		for _, db := range []string{"0", "9"} {
			c := dialRaw(t, addr)
			if db != "0" {
				out = append(out, c.do("SELECT", db))
			}
			for _, cmd := range [][]string{{"FLUSHALL"}, {"DBSIZE"}, {"KEYS", "*"}, {"RANDOMKEY"}, {"SCAN", "0"}, {"FLUSHDB"}, {"DBSIZE"}, {"RANDOMKEY"}} {
				out = append(out, db+" "+strings.Join(cmd, " ")+": "+c.do(cmd...))
			}
		}
		return out
	}
	got, want := run(e.addr), run(plain.Addr)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("through lockproxy:\n%s\nValkey directly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, section := range []string{"keyspace", "errorstats"} {
		behind := dialRaw(t, e.srv.Addr).do("INFO", section)
		alone := dialRaw(t, plain.Addr).do("INFO", section)
		if behind != alone {
			t.Errorf("INFO %s of the Valkey behind lockproxy: %q; of Valkey alone: %q", section, behind, alone)
		}
	}
}

// A durable fenced write is answered after its WAIT, which often comes in
// a later read of the shared upstream connection than the write's own
// reply: meanwhile other clients' replies arrive on that connection. The
// write's reply is the write's (issue 29's Sentinel chaos run, with
// durability, saw fenced writes answered nil and streams left with a
// stray byte: the reply was kept as a slice of the connection's read
// buffer, which the later replies overwrote).
func TestDurableWriteReplyKeptAcrossReads(t *testing.T) {
	primary, _ := replPrimaryReplica(t)
	e := &env{t: t, srv: primary}
	e.startProxy(rulesOptions(t, failoverFenceRule+"    durability: {replicas: 1, timeout: 2s}\n"))
	d := e.direct()
	d.Set(ctx, "other", "0123456789", 0)
	a := dialRaw(t, e.addr)
	acquire(t, a, "{d}:mutex", "a", 30*time.Second)
	// Others read on the shared connections all the while.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		o := dialRaw(t, e.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := strings.Repeat(string(resp.AppendCommandStrings(nil, "GET", "other")), 20)
			for {
				select {
				case <-stop:
					return
				default:
				}
				o.send(batch)
				for range 20 {
					if _, err := o.readErr(time.Minute); err != nil {
						return
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := 1; i <= 150; i++ {
		got := a.do("RPUSH", "{d}:data", "x")
		if strings.HasPrefix(got, "-NOTDURABLE") {
			continue
		}
		if got != fmt.Sprintf(":%d\r\n", i) {
			t.Fatalf("write %d answered %q", i, got)
		}
	}
}
