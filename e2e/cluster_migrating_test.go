package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// While a lock's slot is MIGRATING on its primary (IMPORTING on the
// target) and its keys are still all there, the source runs lockproxy's
// scripts, and Valkey refuses, inside a script, any access to a key of
// that slot that is absent. A release, a holder's PEXPIRE 0 or SET with a
// past expiry, and a client's release script each delete a key of the
// lock's family; each must answer as without the migration and leave no
// record behind (issue 17: they answered "non local key" after deleting
// the lock, and left its records for the lease to end).
func TestClusterMigratingSlotLockScripts(t *testing.T) {
	e, cl := clusterEnv(t, func() proxy.Options {
		o := rulesOptions(t, rule("rewrite"))
		o.Upstream.Cluster.Refresh = config.Duration(time.Hour)
		return o
	}())
	m := slotMap(t, cl)
	const tag = "{migrating}"
	slot := cluster.Slot([]byte(tag))
	srcAddr, _ := m.Primary(slot)
	var dstAddr string
	for _, p := range m.Primaries {
		if p != srcAddr {
			dstAddr = p
			break
		}
	}
	id := func(addr string) string {
		out, err := valkeytest.Do(addr, "CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	srcID, dstID := id(srcAddr), id(dstAddr)
	setslot := func(addr string, args ...string) {
		t.Helper()
		out, err := valkeytest.Do(addr, append([]string{"CLUSTER", "SETSLOT", strconv.Itoa(int(slot))}, args...)...)
		if err != nil || !strings.HasPrefix(out, "OK") {
			t.Fatalf("SETSLOT %q on %s: %q %v", args, addr, out, err)
		}
	}
	stable := func() {
		for _, a := range []string{dstAddr, srcAddr} {
			_, _ = valkeytest.Do(a, "CLUSTER", "SETSLOT", strconv.Itoa(int(slot)), "STABLE")
		}
	}
	t.Cleanup(stable) // the shared cluster left clean, whatever happens

	noLease, mixed, twice := tag+":nolease:lock", tag+":mixed:lock", tag+":twice:lock"
	expired, past, script := tag+":pexpire:lock", tag+":past:lock", tag+":script:lock"
	plain := tag + ":plain"
	locks := []string{noLease, mixed, twice, expired, past, script}
	c := dialRaw(t, e.addr)
	// Acquired before the migration starts: a script runs on the source
	// only while all its keys are there.
	eq(t, c.do("SET", noLease, "t1", "NX"), "+OK\r\n")
	eq(t, c.do("SET", mixed, "t2", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, c.do("SET", twice, "t6", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, c.do("SET", expired, "t3", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, c.do("SET", past, "t4", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, c.do("SET", script, "t5", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, c.do("SET", plain, "v"), "+OK\r\n")

	setslot(dstAddr, "IMPORTING", srcID)
	setslot(srcAddr, "MIGRATING", dstID)
	// LOCKPROXY LOCKS reads the slot's index on the source while it is there.
	listed := c.do("LOCKPROXY", "LOCKS", tag+"*")
	for _, l := range locks {
		mustContain(t, listed, l)
	}

	// Each checked on its own (not fatal): every path is told.
	check := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	// Release's general path: a lock without a lease; a lock with a plain
	// key; a lock named twice.
	check(c.do("DEL", noLease), ":1\r\n")
	check(c.do("DEL", plain, mixed), ":2\r\n")
	check(c.do("DEL", twice, twice), ":1\r\n")
	// Holder: commands that end the key.
	check(c.do("PEXPIRE", expired, "0"), ":1\r\n")
	check(c.do("SET", past, "t4b", "XX", "PXAT", "1"), "+OK\r\n")
	// A client's release script (bsm/redislock's, word for word).
	const release = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	check(c.do("EVAL", release, "1", script, "t5"), ":1\r\n")
	// The releases emptied the slot's index, which the source then answers
	// with ASK: LOCKS leaves that slot out rather than fail.
	check(c.do("LOCKPROXY", "LOCKS", tag+"*"), "*0\r\n")

	stable()
	src := valkeytest.Dial(t, srcAddr, 2)
	for _, k := range append([]string{plain}, locks...) {
		if got := string(src.Do(t, "EXISTS", k, k+":lockproxy:owners")); got != ":0\r\n" {
			t.Errorf("%s or its records left behind: EXISTS %q", k, got)
		}
		src.Do(t, "DEL", k+":lockproxy:grants")
	}
}
