package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// INFO's Keyspace section through the proxy counts every primary's keys:
// keys and expires are the sums of what each primary says directly, the
// other sections are one node's, and DBSIZE agrees with it. INFO keyspace,
// INFO, INFO all and INFO keyspace lockproxy all carry the summed section.
func TestClusterInfoKeyspace(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	keys := keysEveryPrimary(m, "ks:", 3)
	for i, k := range keys {
		if i%2 == 0 {
			eq(t, c.do("SET", k, "v", "EX", "1000"), "+OK\r\n")
		} else {
			eq(t, c.do("SET", k, "v"), "+OK\r\n")
		}
	}
	defer c.do(append([]string{"DEL"}, keys...)...)
	var keysSum, expiresSum int64
	for _, p := range m.Primaries {
		line := infoField(string(valkeytest.Dial(t, p, 2).Do(t, "INFO", "keyspace")), "db0")
		if line == "" {
			t.Fatalf("%s has no keys", p)
		}
		keysSum += keyspaceField(t, line, "keys")
		expiresSum += keyspaceField(t, line, "expires")
	}
	for _, args := range [][]string{{"INFO", "keyspace"}, {"INFO"}, {"INFO", "all"}, {"INFO", "keyspace", "lockproxy"}} {
		info := c.do(args...)
		line := infoField(info, "db0")
		if line == "" || keyspaceField(t, line, "keys") != keysSum || keyspaceField(t, line, "expires") != expiresSum {
			t.Errorf("%v: db0:%s; the primaries hold keys=%d expires=%d", args, line, keysSum, expiresSum)
		}
		if ttl := keyspaceField(t, line, "avg_ttl"); ttl < 0 || ttl > 1000*1000 {
			t.Errorf("%v: avg_ttl %d outside the keys' TTLs", args, ttl)
		}
		if strings.Count(info, "# Keyspace") != 1 {
			t.Errorf("%v: %d Keyspace sections:\n%s", args, strings.Count(info, "# Keyspace"), info)
		}
		if args[0] == "INFO" && len(args) == 1 && !strings.Contains(info, "# Server") {
			t.Errorf("INFO lost the other sections:\n%s", info)
		}
		if len(args) == 3 && !strings.Contains(info, "# Lockproxy") {
			t.Errorf("INFO keyspace lockproxy: no Lockproxy section:\n%s", info)
		}
	}
	// RESP3: the same section in a verbatim string.
	c3 := dialRaw(t, e.addr)
	c3.do("HELLO", "3")
	v, _, err := resp.Parse([]byte(c3.do("INFO", "keyspace")))
	if err != nil || v.Type != '=' || keyspaceField(t, infoField(string(v.Str), "db0"), "keys") != keysSum {
		t.Errorf("RESP3 INFO keyspace: %q %v", v.Str, err)
	}
	eq(t, c.do("DBSIZE"), fmt.Sprintf(":%d\r\n", keysSum))
}

// WAIT runs on the node of the session's last command and counts the
// replicas that acknowledged the session's writes there, as on one server:
// with the replica stopped, a write is not acknowledged and WAIT says 0
// after its timeout; running again, 1. After a WAIT the session still
// reaches every node (a key of another primary), and a WAIT after a write
// there counts that primary's replica.
func TestClusterWait(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	p0, p1 := cl.ByAddr(m.Primaries[0]), cl.ByAddr(m.Primaries[1])
	r0, err := cl.ReplicaOf(p0)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := cl.ReplicaOf(p1)
	if err != nil {
		t.Fatal(err)
	}
	waitReplicaOnline(t, p0, r0)
	waitReplicaOnline(t, p1, r1)
	a := keysOn(m, p0.Addr, "wait:", 1)[0]
	b := keysOn(m, p1.Addr, "wait:", 1)[0]
	c := dialRaw(t, e.addr)
	defer c.do("DEL", a, b)
	eq(t, c.do("SET", a, "1"), "+OK\r\n")
	eq(t, c.do("WAIT", "1", "5000"), ":1\r\n")

	var got string
	whileStopped(t, r0, func() {
		eq(t, c.do("SET", a, "2"), "+OK\r\n")
		got = c.do("WAIT", "1", "300")
	})
	if got != ":0\r\n" {
		t.Errorf("WAIT 1 300 with the replica stopped: %q, want :0 (the write was not acknowledged)", got)
	}
	eq(t, c.do("WAIT", "1", "5000"), ":1\r\n")

	// A write to another primary, on a shared connection (the session
	// leaves its own), with that primary's replica stopped: the WAIT after
	// it, on a new connection there, still waits for that write.
	whileStopped(t, r1, func() {
		eq(t, c.do("SET", b, "2"), "+OK\r\n")
		got = c.do("WAIT", "1", "300")
	})
	if got != ":0\r\n" {
		t.Errorf("WAIT 1 300 after a write to the other primary, its replica stopped: %q, want :0", got)
	}
	eq(t, c.do("WAIT", "1", "5000"), ":1\r\n")
	eq(t, c.do("GET", a), bulk("2"))
	eq(t, c.do("KEYS", "*:lockproxy:wait"), "*0\r\n") // the WAITs' own writes left nothing
}
