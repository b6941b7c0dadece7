package lockproxy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/policy"
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
	cl, err := valkeytest.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	opts := rulesOptions(t, rules)
	opts.Upstream.Cluster.Seeds = cl.Seeds()
	opts.Upstream.ReconnectBackoff = policy.Duration(20 * time.Millisecond)
	opts.Upstream.MaxBackoff = policy.Duration(200 * time.Millisecond)
	opts.Upstream.DialTimeout = policy.Duration(time.Second)
	opts.Upstream.ReplyTimeout = policy.Duration(time.Second)
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
	eq(t, token(t, a, "{c}:d:cut"), int64(0))
	mustContain(t, a.do("PEXPIRE", lock, "40000"), "-NOTDURABLE")
	mustContain(t, a.do("SET", "{c}:data", "2"), "-NOTDURABLE")
}
