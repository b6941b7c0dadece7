package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Issue 29 in front of a Valkey Cluster: durability, script acquisitions,
// a node restarted without persistence and an allowed flush
// (docs/failover.md).

// clusterFailoverEnv starts a fresh 3-primary cluster with replicas and a
// lockproxy in front of it with rules, and makes the replica of lock's
// primary log in as "repl", so that the test can cut it off
// (cutOffReplica).
type clusterFailoverEnv struct {
	cl               *valkeytest.Cluster
	e                *env
	primary, replica *valkeytest.Server
}

func startClusterFailover(t *testing.T, rules, lock string) *clusterFailoverEnv {
	t.Helper()
	ce := startClusterProxy(t, rules, lock)
	primary, replica := ce.primary, ce.replica
	replicateAsRepl(t, primary, replica)
	return ce
}

// startClusterProxy starts a fresh 3-primary cluster with replicas and a
// lockproxy in front of it with rules; primary is lock's node.
func startClusterProxy(t *testing.T, rules, lock string) *clusterFailoverEnv {
	t.Helper()
	cl, err := valkeytest.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	opts := rulesOptions(t, rules)
	opts.Upstream.Cluster.Seeds = cl.Seeds()
	opts.Upstream.ReconnectBackoff = config.Duration(20 * time.Millisecond)
	opts.Upstream.MaxBackoff = config.Duration(200 * time.Millisecond)
	opts.Upstream.DialTimeout = config.Duration(time.Second)
	opts.Upstream.ReplyTimeout = config.Duration(time.Second)
	e := &env{t: t, srv: cl.Nodes[0]}
	e.startProxy(opts)
	primary, err := cl.Primary(int(cluster.Slot([]byte(lock))))
	if err != nil {
		t.Fatal(err)
	}
	replica, err := cl.ReplicaOf(primary)
	if err != nil {
		t.Fatal(err)
	}
	return &clusterFailoverEnv{cl: cl, e: e, primary: primary, replica: replica}
}

// durability: {replicas: 1, ...} in front of a cluster: an acquisition is
// answered once the replica of the lock's node has it; with that replica
// cut off, SET NX answers nil, SETNX :0 and SET NX GET NOTDURABLE, the
// locks are undone on the node (token-checked), and a renewal and a
// fenced write answer NOTDURABLE. On main durability was not applied in
// front of a cluster: the acquisitions made while the replica was cut off
// answered OK.
func TestDurableGrantsInCluster(t *testing.T) {
	const rules = `locks:
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: highest
    durability: {replicas: 1, timeout: 200ms}
  - pattern: "*:cut"
    durability: {replicas: 1, timeout: 200ms}
`
	const lock = "{c}:mutex"
	ce := startClusterFailover(t, rules, lock)
	a := dialRaw(t, ce.e.addr)
	// Retried until the replica acknowledged it in time (a loaded machine).
	acquire(t, a, lock, "A", 60*time.Second)
	rc := valkeytest.Dial(t, ce.replica.Addr, 2)
	rc.Do(t, "READONLY")
	// Acknowledged: the replica has it already.
	eq(t, string(rc.Do(t, "GET", lock)), "$1\r\nA\r\n")

	before := metric(t, metrics(t, ce.e), "lockproxy_grants_undone_total")
	cutOffReplica(t, ce.primary)
	eq(t, a.do("SET", "{c}:d:cut", "b", "NX", "PX", "60000"), "$-1\r\n")
	eq(t, a.do("SETNX", "{c}:e:cut", "b"), ":0\r\n")
	mustContain(t, a.do("SET", "{c}:f:cut", "b", "NX", "GET"), "-NOTDURABLE")
	eq(t, metric(t, metrics(t, ce.e), "lockproxy_grants_undone_total"), before+3)
	for _, k := range []string{"{c}:d:cut", "{c}:e:cut", "{c}:f:cut"} {
		waitFor(t, 10*time.Second, k+" undone on the node", func() bool {
			got, err := valkeytest.Do(ce.primary.Addr, "EXISTS", k)
			return err == nil && strings.TrimSpace(got) == "0"
		})
	}
	undone(t, a, "{c}:d:cut")
	mustContain(t, a.do("PEXPIRE", lock, "40000"), "-NOTDURABLE")
	mustContain(t, a.do("SET", "{c}:data", "2"), "-NOTDURABLE")
}

// failOver kills the primary (SIGKILL) and waits until the cluster has
// promoted its replica.
func (ce *clusterFailoverEnv) failOver(t *testing.T) {
	t.Helper()
	ce.primary.Stop()
	waitFor(t, 60*time.Second, "the cluster promotes the replica", func() bool {
		role, _ := valkeytest.Do(ce.replica.Addr, "ROLE")
		return strings.HasPrefix(role, "master")
	})
}

// waitReplicaHas waits until the replica holds lock with value.
func (ce *clusterFailoverEnv) waitReplicaHas(t *testing.T, lock, value string) {
	t.Helper()
	rc := valkeytest.Dial(t, ce.replica.Addr, 2)
	rc.Do(t, "READONLY")
	want := "$" + strconv.Itoa(len(value)) + "\r\n" + value + "\r\n"
	waitFor(t, 10*time.Second, "the replica has "+lock, func() bool { return string(rc.Do(t, "GET", lock)) == want })
}

// scriptAcquire takes lock with a client's script (SET NX inside EVAL, as
// lock libraries do), retrying while the cluster is out of reach or the
// lock is held, and returns the token it was granted.
func scriptAcquire(t *testing.T, r *raw, lock, value string, within time.Duration) int64 {
	t.Helper()
	const obtain = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"
	waitFor(t, within, "acquire "+lock+" as "+value+" by a script", func() bool {
		got, err := r.readErrDo(5*time.Second, "EVAL", obtain, "1", lock, value, "2000")
		return err == nil && got == "+OK\r\n"
	})
	return token(t, r, lock)
}

// Script acquisitions take the node's config epoch in front of a
// cluster, as SET NX does: A takes the lock by EVAL (replicated), the
// replica is cut off, A releases and B takes it by EVAL (never
// replicated), the primary is killed and the replica promoted; C's token
// (EVAL too) is above B's. On main the monitor's grant minted a plain
// INCR in front of a cluster: C was given B's token again.
func TestScriptTokensRiseAcrossClusterFailover(t *testing.T) {
	const lock = "{s}:mutex"
	ce := startClusterFailover(t, "locks:\n  - pattern: \"{*}:mutex\"\n    release: rewrite\n", lock)
	a, b, c := dialRaw(t, ce.e.addr), dialRaw(t, ce.e.addr), dialRaw(t, ce.e.addr)
	ta := scriptAcquire(t, a, lock, "A", 20*time.Second)
	ce.waitReplicaHas(t, lock, "A")
	cutOffReplica(t, ce.primary)
	release(t, a, lock)
	tb := scriptAcquire(t, b, lock, "B", 10*time.Second)
	if tb <= ta {
		t.Fatalf("B's token %d is not above A's %d", tb, ta)
	}
	ce.failOver(t)
	tc := scriptAcquire(t, c, lock, "C", 60*time.Second)
	t.Logf("tokens: A %d, B %d (lost in the failover), C %d", ta, tb, tc)
	if tc <= tb {
		t.Fatalf("C was granted token %d after B's %d: a token repeated or went back", tc, tb)
	}
}

// A cluster primary restarted without persistence keeps its config epoch
// (nodes.conf) and loses its counters: tokens minted after the restart,
// by SET NX and by a client's script, are above those minted before. On
// main both started again at the node's floor: the first grant after the
// restart repeated the first grant before it.
func TestTokensRiseAcrossClusterNodeRestart(t *testing.T) {
	const lock, slock = "{r}:mutex", "{r}:s:mutex"
	ce := startClusterProxy(t, mutexRule, lock)
	a := dialRaw(t, ce.e.addr)
	var before [2]int64
	for range 2 {
		before[0] = acquire(t, a, lock, "A", 20*time.Second)
		release(t, a, lock)
		before[1] = scriptAcquire(t, a, slock, "A", 20*time.Second)
		release(t, a, slock)
	}
	ce.primary.Restart(t) // SIGKILL, then started again: empty, same nodes.conf
	if err := ce.cl.WaitOK(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if role, _ := valkeytest.Do(ce.primary.Addr, "ROLE"); !strings.HasPrefix(role, "master") {
		t.Fatalf("the restarted node is no longer the primary (a failover, not a restart): %q", role)
	}
	after := [2]int64{acquire(t, a, lock, "B", 60*time.Second), scriptAcquire(t, a, slock, "B", 60*time.Second)}
	t.Logf("SET NX: %d before, %d after; script: %d before, %d after", before[0], after[0], before[1], after[1])
	for i := range after {
		if after[i] <= before[i] {
			t.Errorf("%s: token %d after the restart, %d before it", []string{"SET NX", "script"}[i], after[i], before[i])
		}
	}
}

// A FLUSHALL and a FLUSHDB the rules allow (on_flush: allow), sent
// through lockproxy in front of a cluster, empty every primary: the
// tokens after each are above those before it, for SET NX and a client's
// script alike. On main the flush went to every primary as it came, and
// the next grants repeated the first ones.
func TestTokensRiseAcrossClusterFlush(t *testing.T) {
	const lock, slock = "{f}:mutex", "{f}:s:mutex"
	ce := startClusterProxy(t, mutexRule, lock)
	a := dialRaw(t, ce.e.addr)
	take := func(who string) [2]int64 { return takeTwice(t, a, lock, slock, who) }
	last := take("A")
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		eq(t, a.do(flush), "+OK\r\n")
		got, _ := valkeytest.Do(ce.primary.Addr, "EXISTS", "{f}:mutex:lockproxy:grants", "{f}:s:mutex:lockproxy:grants")
		eq(t, strings.TrimSpace(got), "0")
		next := take("B")
		tokensRose(t, flush, last, next)
		last = next
	}
}

// takeTwice takes and releases lock by SET NX and slock by a script, twice
// each, as who, and returns the last tokens of each.
func takeTwice(t *testing.T, a *raw, lock, slock, who string) [2]int64 {
	t.Helper()
	var got [2]int64
	for range 2 {
		got[0] = acquire(t, a, lock, who, 20*time.Second)
		release(t, a, lock)
		got[1] = scriptAcquire(t, a, slock, who, 20*time.Second)
		release(t, a, slock)
	}
	return got
}

// tokensRose checks that the SET NX and script tokens granted after a
// flush are above those granted before it.
func tokensRose(t *testing.T, flush string, last, next [2]int64) {
	t.Helper()
	t.Logf("%s: SET NX %d then %d; script %d then %d", flush, last[0], next[0], last[1], next[1])
	for i := range next {
		if next[i] <= last[i] {
			t.Errorf("%s, %s: token %d after the flush, %d before it", flush, []string{"SET NX", "script"}[i], next[i], last[i])
		}
	}
}

// grantTimes reads, from srv, the grant time and lease end (Valkey's
// clock, ms) of the record of lock whose value is value.
func grantTimes(t *testing.T, srv *valkeytest.Server, lock, value string) (at, end int64) {
	t.Helper()
	c := valkeytest.Dial(t, srv.Addr, 2)
	c.Do(t, "READONLY")
	v, _, err := resp.Parse(c.Do(t, "HVALS", string(rewrite.RecordsKey([]byte(lock)))))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Elems {
		f := strings.Fields(string(e.Str))
		if len(f) == 4 && f[3] == value {
			at, _ = strconv.ParseInt(f[1], 10, 64)
			end, _ = strconv.ParseInt(f[2], 10, 64)
			return at, end
		}
	}
	t.Fatalf("no record of %s as %s on %s: %v", lock, value, srv.Addr, v)
	return 0, 0
}

// max_lease in front of a cluster (the lock delay): A takes the lock
// (replicated), the replica is cut off, A releases and B takes it for 8 s
// (never replicated), the primary is killed and the replica promoted. C
// is refused (nil) until B's lost lease ran out: nobody is granted the
// lock while B may still believe it holds it. On main the lock delay did
// not apply in front of a cluster: C was granted the lock as soon as the
// replica was promoted, seconds before B's lease ended.
func TestLockDelayAcrossClusterFailover(t *testing.T) {
	const lock = "{l}:mutex"
	ce := startClusterFailover(t, "locks:\n  - pattern: \"{*}:mutex\"\n    max_lease: 8s\n", lock)
	a, b, c := dialRaw(t, ce.e.addr), dialRaw(t, ce.e.addr), dialRaw(t, ce.e.addr)
	// The slot's first grant starts its mark (a refusal for max_lease).
	acquire(t, a, lock, "A", 60*time.Second)
	ce.waitReplicaHas(t, lock, "A")
	cutOffReplica(t, ce.primary)
	release(t, a, lock)
	eq(t, retryUpstream(t, b, "SET", lock, "B", "NX", "PX", "8000"), "+OK\r\n")
	_, bEnd := grantTimes(t, ce.primary, lock, "B")
	ce.failOver(t)
	grantedAfter(t, ce, lock, bEnd, func() (string, error) {
		return c.readErrDo(5*time.Second, "SET", lock, "C", "NX", "PX", "8000")
	})
}

// grantedAfter tries take (C's acquisition, "$-1" while refused) until it
// is granted, then checks from the promoted replica's record that C was
// granted no earlier than bEnd, when B's lost lease ran out, and that it
// was refused at least once (the lock delay held it back).
func grantedAfter(t *testing.T, ce *clusterFailoverEnv, lock string, bEnd int64, take func() (string, error)) {
	t.Helper()
	refused := 0
	waitFor(t, 60*time.Second, "C is granted the lock", func() bool {
		got, err := take()
		if err == nil && got == "$-1\r\n" {
			refused++
		}
		return err == nil && got == "+OK\r\n"
	})
	cAt, _ := grantTimes(t, ce.replica, lock, "C")
	t.Logf("B's lost lease ended at %d; C was granted at %d, after %d refusals", bEnd, cAt, refused)
	if cAt < bEnd {
		t.Fatalf("C was granted the lock at %d, %d ms before B's lost lease ran out", cAt, bEnd-cAt)
	}
	if refused == 0 {
		t.Fatal("C was never refused")
	}
}

// A FLUSHALL or FLUSHDB queued in a transaction, in front of a cluster
// (it goes to the transaction's node as it came): the grants after it,
// by SET NX and by a client's script, are above those before it, as for
// the plain form (TestTokensRiseAcrossClusterFlush). On main the flush
// raised no epoch: the next grants repeated the first ones.
func TestTokensRiseAcrossClusterFlushInTransaction(t *testing.T) {
	const lock, slock = "{t}:mutex", "{t}:s:mutex"
	ce := startClusterProxy(t, mutexRule, lock)
	a := dialRaw(t, ce.e.addr)
	take := func(who string) [2]int64 { return takeTwice(t, a, lock, slock, who) }
	last := take("A")
	for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
		// The key puts the transaction on the locks' node.
		eq(t, a.do("MULTI"), "+OK\r\n")
		eq(t, a.do("GET", "{t}:x"), "+QUEUED\r\n")
		eq(t, a.do(flush), "+QUEUED\r\n")
		eq(t, a.do("EXEC"), "*2\r\n$-1\r\n+OK\r\n")
		got, _ := valkeytest.Do(ce.primary.Addr, "EXISTS", "{t}:mutex:lockproxy:grants", "{t}:s:mutex:lockproxy:grants")
		eq(t, strings.TrimSpace(got), "0")
		next := take("B")
		tokensRose(t, flush+" in a transaction", last, next)
		last = next
	}
}
