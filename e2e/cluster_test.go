package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/redis/go-redis/v9"
)

// The cluster tests share one real cluster per package run
// (valkeytest.SharedCluster; TestMain stops it). Each uses keys of its own.

// Commands reach the primary of their key's slot, and their replies are the
// bytes that primary gives when asked directly (a differential test in
// cluster mode): every key lands on its node, none on another.
func TestClusterRoutingDifferential(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	through := dialRaw(t, e.addr)
	for i := range 60 {
		k := fmt.Sprintf("route:%d", i)
		eq(t, through.do("SET", k, "v"+strconv.Itoa(i)), "+OK\r\n")
	}
	for i := range 60 {
		k := fmt.Sprintf("route:%d", i)
		eq(t, directTo(t, m, k, "GET", k), bulk("v"+strconv.Itoa(i)))
	}
	// The same commands on keys of their own, through the proxy and
	// straight to each key's node: the same bytes.
	cmds := [][]string{
		{"SET", "K", "v"}, {"GET", "K"}, {"INCR", "K"}, {"APPEND", "K", "x"}, {"STRLEN", "K"},
		{"HSET", "H", "a", "1", "b", "2"}, {"HGETALL", "H"}, {"INCR", "H"}, {"LPUSH", "L", "x", "y"},
		{"LRANGE", "L", "0", "-1"}, {"GET", "MISSING"}, {"TYPE", "H"}, {"SET", "K"},
		{"EXPIRE", "K", "100"}, {"TTL", "K"}, {"SADD", "S", "a", "b"}, {"SCARD", "S"}, {"DEL", "K"},
	}
	for _, c := range cmds {
		name := func(prefix string) []string {
			out := append([]string(nil), c...)
			if len(out) > 1 {
				out[1] = prefix + out[1]
			}
			return out
		}
		pc, dc := name("diff:p:"), name("diff:d:")
		eq(t, through.do(pc...), directTo(t, m, dc[1], dc...))
	}
}

// Keys in several slots: DEL/UNLINK/EXISTS/TOUCH are split and summed, MGET
// is reassembled in the order of the keys, MSET is split; anything else
// gets Valkey's CROSSSLOT; SELECT of another database is refused as a
// cluster refuses it; a transaction that reaches a second node is refused
// at queue time and its EXEC aborts.
func TestClusterCrossSlot(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	keys := keysEveryPrimary(m, "xs:", 2)
	mset := []string{"MSET"}
	for i, k := range keys {
		mset = append(mset, k, "v"+strconv.Itoa(i))
	}
	eq(t, c.do(mset...), "+OK\r\n")
	for i, k := range keys {
		eq(t, directTo(t, m, k, "GET", k), bulk("v"+strconv.Itoa(i)))
	}
	mget := append([]string{"MGET"}, keys[0], "xs:missing", keys[len(keys)-1], keys[1])
	eq(t, c.do(mget...), "*4\r\n"+bulk("v0")+"$-1\r\n"+bulk("v"+strconv.Itoa(len(keys)-1))+bulk("v1"))
	exists := append([]string{"EXISTS"}, keys...)
	exists = append(exists, keys[0], "xs:missing")
	eq(t, c.do(exists...), ":"+strconv.Itoa(len(keys)+1)+"\r\n") // a key named twice counts twice, as in Valkey
	eq(t, c.do(append([]string{"TOUCH"}, keys...)...), ":"+strconv.Itoa(len(keys))+"\r\n")
	eq(t, c.do("DEL", keys[0], keys[2], "xs:missing"), ":2\r\n")
	eq(t, c.do(append([]string{"UNLINK"}, keys...)...), ":"+strconv.Itoa(len(keys)-2)+"\r\n")
	for _, k := range keys {
		eq(t, directTo(t, m, k, "EXISTS", k), ":0\r\n")
	}

	// Valkey's own CROSSSLOT, byte for byte, for a command that is not split.
	a, b := keys[0], keys[len(keys)-1]
	direct := directTo(t, m, a, "SUNIONSTORE", a, a, b)
	mustContain(t, direct, "-CROSSSLOT")
	eq(t, c.do("SUNIONSTORE", a, a, b), direct)
	eq(t, c.do("EVAL", "return 1", "2", a, b), direct)
	eq(t, c.do("SELECT", "1"), directTo(t, m, a, "SELECT", "1"))
	eq(t, c.do("SELECT", "0"), "+OK\r\n")

	// A transaction on the first key's node: the second node's key is
	// refused while queued, and EXEC aborts, as Valkey's CROSSSLOT does.
	eq(t, c.do("MULTI"), "+OK\r\n")
	eq(t, c.do("SET", a, "1"), "+QUEUED\r\n")
	mustContain(t, c.do("SET", b, "1"), "-CROSSSLOT this transaction's keys are on more than one cluster node")
	mustContain(t, c.do("EXEC"), "-EXECABORT")
	// A transaction whose keys are on one node, not the one the session's
	// last command went to, runs there.
	eq(t, c.do("GET", b), "$-1\r\n")
	eq(t, c.do("MULTI"), "+OK\r\n")
	eq(t, c.do("INCR", a), "+QUEUED\r\n")
	eq(t, c.do("INCR", a), "+QUEUED\r\n")
	eq(t, c.do("EXEC"), "*2\r\n:1\r\n:2\r\n")
	// After it, the session reaches every node again.
	eq(t, c.do("SET", b, "after"), "+OK\r\n")
	eq(t, directTo(t, m, b, "GET", b), bulk("after"))
	eq(t, c.do("DEL", a, b), ":2\r\n")

	// WATCH opens the connection on its key's node; the transaction runs
	// there, and a key of another node is refused on that connection.
	w := dialRaw(t, e.addr)
	eq(t, w.do("WATCH", b), "+OK\r\n")
	eq(t, w.do("MULTI"), "+OK\r\n")
	eq(t, w.do("SET", b, "watched"), "+QUEUED\r\n")
	eq(t, w.do("EXEC"), "*1\r\n+OK\r\n")
	eq(t, directTo(t, m, b, "GET", b), bulk("watched"))
	mustContain(t, w.do("GET", a), "-CROSSSLOT this client's own connection")
	eq(t, w.do("DEL", b), ":1\r\n")
}

// The seed's story on a lock in every shard: A acquires with abc and
// stalls past its lease, B acquires with xyz, A's blind DEL deletes
// nothing, B's deletes its own lock. The lock's counter and owner records
// live on the lock's node, in its slot.
func TestClusterSeedStoryEveryShard(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, rule("rewrite")))
	m := slotMap(t, cl)
	for _, p := range m.Primaries {
		k := keysOn(m, p, "story:", 1)[0] + ":lock"
		for a, _ := m.Primary(cluster.Slot([]byte(k))); a != p; a, _ = m.Primary(cluster.Slot([]byte(k))) {
			k = "x" + k
		}
		t.Run(p, func(t *testing.T) {
			a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
			eq(t, a.do("SET", k, "abc", "NX", "PX", "100"), "+OK\r\n")
			time.Sleep(150 * time.Millisecond)
			eq(t, b.do("SET", k, "xyz", "NX", "PX", "30000"), "+OK\r\n")
			eq(t, a.do("DEL", k), ":0\r\n")
			eq(t, directTo(t, m, k, "GET", k), bulk("xyz"))
			eq(t, directTo(t, m, k, "EXISTS", "{"+k+"}:lockproxy:grants"), ":1\r\n")
			eq(t, b.do("DEL", k), ":1\r\n")
			eq(t, directTo(t, m, k, "EXISTS", k), ":0\r\n")
		})
	}
	// A multi-key DEL or UNLINK of locks in several slots (and a plain
	// key) is split by slot, each part through the lock rules, as the
	// client's own DEL of each slot's keys: a stranger's is refused and
	// deletes no lock, the holder's deletes its locks. (On 99745c9 it was refused whole.)
	// One with lockproxy's own keys of another slot is still refused.
	l0 := keysOn(m, m.Primaries[0], "lk:", 1)[0] + ":lock"
	l1 := keysOn(m, m.Primaries[1], "lk:", 1)[0] + ":lock"
	for a, _ := m.Primary(cluster.Slot([]byte(l1))); a != m.Primaries[1]; a, _ = m.Primary(cluster.Slot([]byte(l1))) {
		l1 = "x" + l1
	}
	p2 := keysOn(m, m.Primaries[2], "plain:", 1)[0]
	c, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, c.do("SET", l0, "tok", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, c.do("SET", l1, "tok", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, c.do("SET", p2, "v"), "+OK\r\n")
	// The stranger's parts on the locks are refused (NOTOWNER, the
	// reply); its part on the plain key ran, as a split is not atomic.
	mustContain(t, stranger.do("DEL", l0, l1, p2), "-NOTOWNER lockproxy refused DEL of lock key")
	eq(t, directTo(t, m, l0, "GET", l0), bulk("tok"))
	eq(t, directTo(t, m, l1, "GET", l1), bulk("tok"))
	eq(t, directTo(t, m, p2, "EXISTS", p2), ":0\r\n")
	mustContain(t, c.do("DEL", l0, "{"+l1+"}:lockproxy:grants"), "-CROSSSLOT DEL touches the lock or guarded key")
	eq(t, c.do("UNLINK", l0, l1, "plain:missing"), ":2\r\n")
	eq(t, directTo(t, m, l0, "EXISTS", l0), ":0\r\n")
	eq(t, directTo(t, m, l1, "EXISTS", l1), ":0\r\n")
}

// A slot moves to another primary while clients send commands and hold
// locks in it (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE in batches,
// SETSLOT NODE): every command gets its reply — the proxy follows ASK and
// MOVED, never passing one on — no value is lost, and the locks' holders
// release them while strangers cannot.
func TestClusterSlotMigrationWithLocks(t *testing.T) {
	e, cl := clusterEnv(t, func() proxy.Options {
		o := rulesOptions(t, rule("rewrite"))
		o.Upstream.Cluster.Refresh = config.Duration(time.Hour) // only redirects tell the proxy the slot moved
		return o
	}())
	m := slotMap(t, cl)
	// Keys of one slot, by hash tag; locks and plain keys.
	tag := "{mig}"
	slot := int(cluster.Slot([]byte(tag)))
	srcAddr, _ := m.Primary(uint16(slot))
	var dst *valkeytest.Server
	for _, p := range m.Primaries {
		if p != srcAddr {
			dst = cl.ByAddr(p)
			break
		}
	}
	holders := make([]*raw, 4)
	for i := range holders {
		holders[i] = dialRaw(t, e.addr)
		eq(t, holders[i].do("SET", tag+":"+strconv.Itoa(i)+":lock", "tok"+strconv.Itoa(i), "NX", "PX", "60000"), "+OK\r\n")
	}
	stranger := dialRaw(t, e.addr)
	w := dialRaw(t, e.addr)
	for i := range 40 {
		eq(t, w.do("SET", tag+":k"+strconv.Itoa(i), "0"), "+OK\r\n")
	}
	// Traffic between migration steps: every key read and incremented,
	// the locks refused to the stranger.
	round := 0
	var mu sync.Mutex
	var failures []string
	traffic := func() {
		mu.Lock()
		defer mu.Unlock()
		round++
		for i := range 40 {
			k := tag + ":k" + strconv.Itoa(i)
			if got := w.do("INCR", k); got != ":"+strconv.Itoa(round)+"\r\n" {
				failures = append(failures, fmt.Sprintf("round %d INCR %s: %q", round, k, got))
			}
		}
		for i := range holders {
			k := tag + ":" + strconv.Itoa(i) + ":lock"
			// Refused as a stranger's; or, while the lock's keys are
			// on both nodes (between two MIGRATE batches), Valkey's
			// TRYAGAIN once the proxy's retries are spent: never run.
			if got := stranger.do("DEL", k); !strings.HasPrefix(got, "-NOTOWNER") && !strings.HasPrefix(got, "-TRYAGAIN Multiple keys") {
				failures = append(failures, fmt.Sprintf("round %d stranger DEL %s: %q", round, k, got))
			}
			if got := w.do("GET", k); got != bulk("tok"+strconv.Itoa(i)) {
				failures = append(failures, fmt.Sprintf("round %d GET %s: %q", round, k, got))
			}
		}
	}
	migrateUnderTraffic(t, cl, slot, dst, traffic, &failures, w, "traffic")
	if round < 3 {
		t.Fatalf("only %d rounds of traffic ran during the migration", round)
	}
	for i, h := range holders {
		eq(t, h.do("DEL", tag+":"+strconv.Itoa(i)+":lock"), ":1\r\n") // the holder's release, on the new node
	}
	for i := range 40 {
		eq(t, string(valkeytest.Dial(t, dst.Addr, 2).Do(t, "GET", tag+":k"+strconv.Itoa(i))), bulk(strconv.Itoa(round)))
	}
	eq(t, w.do("DEL", tag+":k0"), ":1\r\n")
	// Put the slot back for the other tests' maps.
	if err := cl.MigrateSlot(slot, cl.ByAddr(srcAddr), nil); err != nil {
		t.Fatal(err)
	}
}

// cluster_face: single_node: go-redis's ClusterClient, given the proxy's
// address, finds one node owning every slot there and sends everything to
// the proxy; the nodes see only lockproxy's connections.
func TestClusterSingleNodeFace(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{Config: config.Config{ClusterFace: config.ClusterFaceSingleNode}})
	m := slotMap(t, cl)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{e.addr}, MaxRedirects: 0})
	defer cc.Close()
	ctx := context.Background()
	for i := range 50 {
		k := "face:" + strconv.Itoa(i)
		if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	for i := range 50 {
		k := "face:" + strconv.Itoa(i)
		if v, err := cc.Get(ctx, k).Int(); err != nil || v != i {
			t.Fatalf("GET %s: %v %v", k, v, err)
		}
		eq(t, directTo(t, m, k, "GET", k), bulk(strconv.Itoa(i)))
	}
	var addrs []string
	var amu sync.Mutex
	if err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		amu.Lock()
		addrs = append(addrs, c.Options().Addr)
		amu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(addrs)
	if len(addrs) != 1 || addrs[0] != e.addr {
		t.Fatalf("ClusterClient's nodes: %v, want only the proxy at %s", addrs, e.addr)
	}
	for _, p := range m.Primaries {
		list, err := valkeytest.Do(p, "CLIENT", "LIST")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(list, "lib-name=go-redis") {
			t.Errorf("a go-redis client is connected to %s itself:\n%s", p, list)
		}
	}
	// valkey-cli -c, which follows redirects itself, meets none.
	host, port, _ := net.SplitHostPort(e.addr)
	for _, args := range [][]string{{"SET", "face:cli", "x"}, {"GET", "face:cli"}, {"DEL", "face:cli"}} {
		out, err := exec.Command("valkey-cli", append([]string{"-c", "-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("valkey-cli -c %v: %v %s", args, err, out)
		}
		want := map[string]string{"SET": "OK\n", "GET": "x\n", "DEL": "1\n"}[args[0]]
		eq(t, string(out), want)
	}
	// The face's own answers.
	c := dialRaw(t, e.addr)
	eq(t, c.do("CLUSTER", "KEYSLOT", "{user1}.a"), directTo(t, m, "x", "CLUSTER", "KEYSLOT", "{user1}.a"))
	mustContain(t, c.do("CLUSTER", "INFO"), "cluster_state:ok")
	mustContain(t, c.do("CLUSTER", "FAILOVER"), "-ERR lockproxy answers CLUSTER SLOTS")
	eq(t, c.do("READONLY"), "+OK\r\n")
}

// cluster_face: hidden (the default): CLUSTER commands answer as a
// standalone server does, byte for byte.
func TestClusterHiddenFace(t *testing.T) {
	e, _ := clusterEnv(t, proxy.Options{})
	standalone := valkeytest.Dial(t, valkeytest.Start(t).Addr, 2)
	c := dialRaw(t, e.addr)
	cmds := [][]string{{"CLUSTER", "INFO"}, {"CLUSTER", "SLOTS"}, {"CLUSTER", "KEYSLOT", "a"},
		{"ASKING"}, {"CLUSTER"}, {"CLUSTER", "FOO"}, {"CLUSTER", "INFO", "extra"}}
	if valkeytest.Binary() == "valkey-server" {
		// Valkey answers these OK when standalone (Redis 7.0 refuses
		// them); the face answers as Valkey does.
		cmds = append(cmds, []string{"READONLY"}, []string{"READWRITE"})
	}
	for _, cmd := range cmds {
		eq(t, c.do(cmd...), string(standalone.Do(t, cmd...)))
	}
}

// migrateUnderTraffic moves slot to dst with traffic run between the
// migration's steps and once more after it (on the old map: MOVED,
// followed), reports what traffic put in failures, and checks through w
// that the proxy followed both ASK and MOVED.
func migrateUnderTraffic(t *testing.T, cl *valkeytest.Cluster, slot int, dst *valkeytest.Server, traffic func(), failures *[]string, w *raw, under string) {
	t.Helper()
	if err := cl.MigrateSlot(slot, dst, traffic); err != nil {
		t.Fatal(err)
	}
	traffic()
	for _, f := range *failures {
		t.Error(f)
	}
	info := w.do("INFO", "lockproxy")
	for _, f := range []string{"cluster_ask_followed", "cluster_moved_followed"} {
		if infoInt(t, info, f) == 0 {
			t.Errorf("%s is 0 after a migration under %s: the redirect path did not run\n%s", f, under, info)
		}
	}
}

// A node with a view of its own (here a one-node cluster that claims every
// slot, listed first among the seeds) does not move the proxy's traffic:
// a map is believed only when a second node gives the same one.
func TestClusterMapNeedsTwoNodes(t *testing.T) {
	rogue := valkeytest.Start(t, "cluster-enabled yes", "cluster-config-file nodes.conf")
	rc := valkeytest.Dial(t, rogue.Addr, 2)
	eq(t, string(rc.Do(t, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")), "+OK\r\n")
	cl := valkeytest.SharedCluster(t)
	e := &env{t: t, srv: rogue}
	var o proxy.Options
	o.Upstream.Cluster.Seeds = append([]string{rogue.Addr}, cl.Seeds()...)
	e.startProxy(o)
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	for i := range 20 {
		k := "agree:" + strconv.Itoa(i)
		eq(t, c.do("SET", k, "v"), "+OK\r\n")
		eq(t, directTo(t, m, k, "GET", k), bulk("v"))
		eq(t, c.do("DEL", k), ":1\r\n")
	}
	eq(t, string(rc.Do(t, "DBSIZE")), ":0\r\n")
	info := c.do("INFO", "lockproxy")
	if infoInt(t, info, "cluster_primaries") != 3 || infoInt(t, info, "cluster_slots_served") != 16384 {
		t.Errorf("the proxy's map:\n%s", info)
	}
}

// One seed is enough: the proxy asks the nodes that seed's map names for
// the second word, and then serves every primary's slots.
func TestClusterOneSeed(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	e := &env{t: t, srv: cl.Nodes[0]}
	var o proxy.Options
	o.Upstream.Cluster.Seeds = []string{cl.Nodes[0].Addr}
	e.startProxy(o)
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	for _, k := range keysEveryPrimary(m, "oneseed:", 2) {
		eq(t, c.do("SET", k, "v"), "+OK\r\n")
		eq(t, directTo(t, m, k, "GET", k), bulk("v"))
		eq(t, c.do("DEL", k), ":1\r\n")
	}
	info := c.do("INFO", "lockproxy")
	if infoInt(t, info, "cluster_primaries") != 3 || infoInt(t, info, "cluster_slots_served") != 16384 {
		t.Errorf("the proxy's map:\n%s", info)
	}
}

// A client logged in as a user of its own reaches every node, and every
// connection used for it logs in as that user: single keys on each primary,
// a DEL split across slots, a KEYS fan-out (refused: the user may not) and a
// key outside its pattern (refused) are Valkey's verdicts for that user,
// not the proxy's. HELLO 3 AUTH too, and go-redis's ClusterClient with a
// user and password through the single_node face.
func TestClusterOwnLogin(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{Config: config.Config{ClusterFace: config.ClusterFaceSingleNode}})
	m := slotMap(t, cl)
	for _, n := range cl.Nodes {
		if n.Process() == nil {
			continue
		}
		if out, err := valkeytest.Do(n.Addr, "ACL", "SETUSER", "carol", "on", ">cpw", "~carol:*", "+@all", "-keys"); err != nil || out != "OK\n" {
			t.Fatalf("ACL SETUSER on %s: %q %v", n.Addr, out, err)
		}
	}
	defer func() {
		for _, n := range cl.Nodes {
			if n.Process() != nil {
				_, _ = valkeytest.Do(n.Addr, "ACL", "DELUSER", "carol")
			}
		}
	}()
	for _, proto := range []string{"2", "3"} {
		c := dialRaw(t, e.addr)
		if proto == "2" {
			mustContain(t, c.do("AUTH", "carol", "nope"), "-WRONGPASS")
			eq(t, c.do("AUTH", "carol", "cpw"), "+OK\r\n")
		} else {
			mustContain(t, c.do("HELLO", "3", "AUTH", "carol", "nope"), "-WRONGPASS")
			mustContain(t, c.do("HELLO", "3", "AUTH", "carol", "cpw"), "%")
		}
		keys := keysEveryPrimary(m, "carol:"+proto+":", 2)
		for _, k := range keys {
			eq(t, c.do("SET", k, "v"), "+OK\r\n")
			eq(t, directTo(t, m, k, "GET", k), bulk("v"))
		}
		mustContain(t, c.do("ACL", "WHOAMI"), "carol")
		mustContain(t, c.do("SET", "dave:k", "v"), "-NOPERM")
		mustContain(t, c.do("KEYS", "*"), "-NOPERM")
		eq(t, c.do(append([]string{"DEL"}, keys...)...), ":"+strconv.Itoa(len(keys))+"\r\n")
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{e.addr}, Username: "carol", Password: "cpw", MaxRedirects: 0})
	defer cc.Close()
	ctx := context.Background()
	for _, k := range keysEveryPrimary(m, "carol:cc:", 2) {
		if err := cc.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatalf("ClusterClient SET %s: %v", k, err)
		}
		eq(t, directTo(t, m, k, "GET", k), bulk("v"))
		if err := cc.Del(ctx, k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cc.Set(ctx, "dave:cc", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("ClusterClient as carol, SET outside her keys: %v, want NOPERM", err)
	}
}

// A lock whose counter cannot share its slot (a '}' with no valid hash tag
// before it) is refused with a sentence; its holder-to-be is told why.
func TestClusterLockWithoutSlotRefused(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, rule("rewrite")))
	m := slotMap(t, cl)
	k := "bad}name:lock"
	c := dialRaw(t, e.addr)
	mustContain(t, c.do("SET", k, "abc", "NX", "PX", "30000"), `-CROSSSLOT lockproxy's script for "bad}name:lock" needs "bad}name:lock:lockproxy:`)
	eq(t, directTo(t, m, k, "EXISTS", k), ":0\r\n")
}

// Keyless commands about the whole keyspace reach every primary, their
// replies folded as the command tips say: DBSIZE summed, KEYS concatenated,
// SCRIPT LOAD and EXISTS on every node (so EVALSHA finds the script
// wherever its keys are), FLUSHALL on all of them, and under on_flush:
// reject refused before any node runs it.
func TestClusterFanOut(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	keys := keysEveryPrimary(m, "fan:", 2)
	for _, k := range keys {
		eq(t, c.do("SET", k, "1"), "+OK\r\n")
	}
	var total int64
	for _, p := range m.Primaries {
		r := string(valkeytest.Dial(t, p, 2).Do(t, "DBSIZE"))
		n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(r, ":")), 10, 64)
		total += n
	}
	eq(t, c.do("DBSIZE"), ":"+strconv.FormatInt(total, 10)+"\r\n")
	got := c.do("KEYS", "fan:*")
	for _, k := range keys {
		mustContain(t, got, bulk(k))
	}
	eq(t, strings.Count(got, "fan:"), len(keys))
	sha := c.do("SCRIPT", "LOAD", "return KEYS[1]")
	mustContain(t, sha, "$40\r\n")
	shaText := strings.Split(sha, "\r\n")[1]
	for _, k := range keys {
		eq(t, c.do("EVALSHA", shaText, "1", k), bulk(k))
	}
	eq(t, c.do("SCRIPT", "EXISTS", shaText, strings.Repeat("0", 40)), "*2\r\n:1\r\n:0\r\n")
	eq(t, c.do(append([]string{"DEL"}, keys...)...), ":"+strconv.Itoa(len(keys))+"\r\n")

	r, _ := clusterEnv(t, rulesOptions(t, "on_flush: reject\n"+rule("rewrite")))
	rc := dialRaw(t, r.addr)
	eq(t, rc.do("SET", keys[0], "kept"), "+OK\r\n")
	mustContain(t, rc.do("FLUSHALL"), "-LOCKED lockproxy refused FLUSHALL")
	eq(t, directTo(t, m, keys[0], "GET", keys[0]), bulk("kept"))
	eq(t, rc.do("DEL", keys[0]), ":1\r\n")
}

// CLUSTER FAILOVER on a replica while a lock is held in its primary's
// slots: the proxy's next commands meet the old primary, now a replica,
// follow its MOVED and read the map again; the values and the lock are on
// the new primary, the holder releases it, a stranger cannot.
func TestClusterFailover(t *testing.T) {
	e, cl := clusterEnv(t, func() proxy.Options {
		o := rulesOptions(t, rule("rewrite"))
		o.Upstream.Cluster.Refresh = config.Duration(time.Hour) // only the redirect tells the proxy
		return o
	}())
	m := slotMap(t, cl)
	old := cl.ByAddr(m.Primaries[0])
	keys := keysOn(m, old.Addr, "fo:", 10)
	lock := keys[0] + ":lock"
	for a, _ := m.Primary(cluster.Slot([]byte(lock))); a != old.Addr; a, _ = m.Primary(cluster.Slot([]byte(lock))) {
		lock = "x" + lock
	}
	holder, stranger, w := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", lock, "abc", "NX", "PX", "60000"), "+OK\r\n")
	for _, k := range keys {
		eq(t, w.do("SET", k, "before"), "+OK\r\n")
	}
	replica, err := cl.ReplicaOf(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Failover(replica); err != nil {
		t.Fatal(err)
	}
	defer func() { // the old primary back, for the tests after this one
		if err := cl.Failover(old); err != nil {
			t.Error(err)
		}
	}()
	for _, k := range keys {
		eq(t, w.do("GET", k), bulk("before"))
		eq(t, w.do("SET", k, "after"), "+OK\r\n")
		eq(t, string(valkeytest.Dial(t, replica.Addr, 2).Do(t, "GET", k)), bulk("after"))
	}
	mustContain(t, stranger.do("DEL", lock), "-NOTOWNER")
	eq(t, holder.do("DEL", lock), ":1\r\n")
	info := w.do("INFO", "lockproxy")
	if infoInt(t, info, "cluster_moved_followed") == 0 {
		t.Errorf("no MOVED followed after the failover:\n%s", info)
	}
	// /metrics reads the same counters.
	mt := metrics(t, e)
	eq(t, metric(t, mt, `lockproxy_cluster_redirects_followed_total{kind="moved"}`), float64(infoInt(t, info, "cluster_moved_followed")))
	eq(t, metric(t, mt, `lockproxy_cluster_slots_served`), 16384.0)
	eq(t, w.do(append([]string{"DEL"}, keys...)...), ":"+strconv.Itoa(len(keys))+"\r\n")
}

// A fence whose counter or guards are in another slot than its lock (a lock
// without a hash tag: "{key}:fence" is "a:mutex:fence") cannot run as one
// script in a cluster: the acquisition is refused with a sentence, and
// nothing is written.
func TestClusterFenceOtherSlotRefused(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    fence:\n      counter: \"{key}:fence\"\n      guards: [\"data:{key}\"]\n"))
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	mustContain(t, c.do("SET", "a:mutex", "tok", "NX", "PX", "30000"), `-CROSSSLOT lockproxy's script for "a:mutex" needs "a:mutex:fence", which is in another hash slot`)
	eq(t, directTo(t, m, "a:mutex", "EXISTS", "a:mutex"), ":0\r\n")
	eq(t, directTo(t, m, "a:mutex:fence", "EXISTS", "a:mutex:fence"), ":0\r\n")
}

// A blocking command waits on its key's node, and the session reaches every
// node after it; shard channels are routed by their slot, so SSUBSCRIBE
// and SPUBLISH meet on the channel's node and no MOVED reaches the client.
func TestClusterBlockingAndShardChannels(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	a := keysOn(m, m.Primaries[0], "blk:", 1)[0]
	b := keysOn(m, m.Primaries[1], "blk:", 1)[0]
	c := dialRaw(t, e.addr)
	eq(t, c.do("RPUSH", a, "x"), ":1\r\n")
	eq(t, c.do("BLPOP", a, "1"), "*2\r\n"+bulk(a)+bulk("x"))
	eq(t, c.do("BLPOP", a, "0.05"), "*-1\r\n")
	eq(t, c.do("SET", b, "y"), "+OK\r\n")
	eq(t, directTo(t, m, b, "GET", b), bulk("y"))
	eq(t, c.do("DEL", b), ":1\r\n")

	ch := keysOn(m, m.Primaries[2], "chan:", 1)[0]
	sub := dialRaw(t, e.addr)
	eq(t, sub.do("SSUBSCRIBE", ch), "*3\r\n"+bulk("ssubscribe")+bulk(ch)+":1\r\n")
	pub := dialRaw(t, e.addr)
	eq(t, pub.do("SPUBLISH", ch, "hello"), ":1\r\n")
	eq(t, sub.read(), "*3\r\n"+bulk("smessage")+bulk(ch)+bulk("hello"))
	eq(t, pub.do("SSUBSCRIBE", ch, ch+"x"), directTo(t, m, ch, "SSUBSCRIBE", ch, ch+"x"))
}

// A slot no primary serves: commands for it, lock commands included, get
// CLUSTERDOWN and a sentence from the proxy and are not sent anywhere; the
// served slots work. (A one-node cluster with half the slots assigned, its
// only seed.)
func TestClusterDownSlotFailsClosed(t *testing.T) {
	node := valkeytest.Start(t, "cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-require-full-coverage no")
	nc := valkeytest.Dial(t, node.Addr, 2)
	eq(t, string(nc.Do(t, "CLUSTER", "ADDSLOTSRANGE", "0", "8191")), "+OK\r\n")
	for !strings.Contains(string(nc.Do(t, "CLUSTER", "INFO")), "cluster_state:ok") {
		time.Sleep(20 * time.Millisecond) // the node takes its new state on its next cron
	}
	o := rulesOptions(t, rule("rewrite"))
	o.Upstream.Cluster.Seeds = []string{node.Addr}
	e := &env{t: t, srv: node}
	e.startProxy(o)
	c := dialRaw(t, e.addr)
	var served, down string
	for i := 0; served == "" || down == ""; i++ {
		k := "cd:" + strconv.Itoa(i) + ":lock"
		if cluster.Slot([]byte(k)) < 8192 {
			served = k
		} else {
			down = k
		}
	}
	eq(t, c.do("SET", served, "abc", "NX", "PX", "30000"), "+OK\r\n")
	eq(t, c.do("DEL", served), ":1\r\n")
	slot := strconv.Itoa(int(cluster.Slot([]byte(down))))
	eq(t, c.do("SET", down, "abc", "NX", "PX", "30000"), "-CLUSTERDOWN no primary serves hash slot "+slot+" now (a failover or resharding in progress, or the cluster is down); lockproxy did not run the command: retry later\r\n")
	mustContain(t, c.do("GET", down), "-CLUSTERDOWN no primary serves hash slot "+slot)
	if keys := string(nc.Do(t, "KEYS", "*")); strings.Contains(keys, down) {
		t.Errorf("the down slot's lock reached the node: %q", keys)
	}
}

// SCAN through the proxy walks every primary: each key once, whatever node
// it is on, with MATCH and COUNT passed to the nodes; a cursor naming no
// primary is refused.
func TestClusterScan(t *testing.T) {
	e, cl := clusterEnv(t, proxy.Options{})
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	keys := keysEveryPrimary(m, "scan:", 7)
	for _, k := range keys {
		eq(t, c.do("SET", k, "1"), "+OK\r\n")
	}
	seen := map[string]int{}
	cursor := "0"
	for i := 0; ; i++ {
		r := c.do("SCAN", cursor, "MATCH", "scan:*", "COUNT", "3")
		v, _, err := resp.Parse([]byte(r))
		if err != nil || len(v.Elems) != 2 {
			t.Fatalf("SCAN %s: %q", cursor, r)
		}
		for _, k := range v.Elems[1].Elems {
			seen[string(k.Str)]++
		}
		cursor = string(v.Elems[0].Str)
		if cursor == "0" {
			break
		}
		if i > 1000 {
			t.Fatal("SCAN does not end")
		}
	}
	if len(seen) != len(keys) {
		t.Errorf("SCAN saw %d keys, want %d: %v", len(seen), len(keys), seen)
	}
	for _, k := range keys {
		if seen[k] == 0 { // SCAN may repeat a key (a node's table rehashing), never miss one
			t.Errorf("SCAN did not return %s", k)
		}
	}
	mustContain(t, c.do("SCAN", "255"), "-ERR invalid cursor: lockproxy's SCAN cursors")
	eq(t, c.do("SCAN", "x"), directTo(t, m, "x", "SCAN", "x"))
	eq(t, c.do(append([]string{"DEL"}, keys...)...), ":"+strconv.Itoa(len(keys))+"\r\n")
}

// LOCKPROXY LOCKS reads the owner records of every primary: a lock held in
// each shard is listed.
func TestClusterLocksListing(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, rule("rewrite")))
	m := slotMap(t, cl)
	c := dialRaw(t, e.addr)
	var locks []string
	for _, p := range m.Primaries {
		k := keysOn(m, p, "listed:", 1)[0] + ":lock"
		for a, _ := m.Primary(cluster.Slot([]byte(k))); a != p; a, _ = m.Primary(cluster.Slot([]byte(k))) {
			k = "x" + k
		}
		locks = append(locks, k)
		eq(t, c.do("SET", k, "tok", "NX", "PX", "30000"), "+OK\r\n")
	}
	out := c.do("LOCKPROXY", "LOCKS")
	for _, k := range locks {
		mustContain(t, out, k)
	}
	for _, k := range locks {
		eq(t, c.do("DEL", k), ":1\r\n")
	}
}

// A primary stops answering (SIGSTOP) while a lock is held in its slots:
// every command meanwhile gets its reply or an error that says it did not
// (UPSTREAM, CLUSTERDOWN, TRYAGAIN), never a redirect nor a wrong value;
// once the cluster has failed it over, the proxy reads the new map and the
// holder releases its lock on the new primary while a stranger cannot.
func TestClusterPrimaryStopped(t *testing.T) {
	e, cl := clusterEnv(t, func() proxy.Options {
		o := rulesOptions(t, rule("rewrite"))
		// 5 s: in a loaded whole run the 3-minute wait below ended on
		// "UPSTREAM ... did not answer within 1s" from a healthy node.
		o.Upstream.ReplyTimeout, o.Upstream.DialTimeout = config.Duration(5*time.Second), config.Duration(time.Second)
		o.Upstream.Cluster.Refresh = config.Duration(500 * time.Millisecond)
		return o
	}())
	m := slotMap(t, cl)
	victim := cl.ByAddr(m.Primaries[2])
	key := keysOn(m, victim.Addr, "stop:", 1)[0]
	lock := key + ":lock"
	for a, _ := m.Primary(cluster.Slot([]byte(lock))); a != victim.Addr; a, _ = m.Primary(cluster.Slot([]byte(lock))) {
		lock = "x" + lock
	}
	holder, stranger, w := dialRaw(t, e.addr), dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", lock, "abc", "NX", "PX", "120000"), "+OK\r\n")
	eq(t, w.do("SET", key, "v"), "+OK\r\n")
	replica, err := cl.ReplicaOf(victim)
	if err != nil {
		t.Fatal(err)
	}
	// The records reach the replica before the primary stops (a WAIT
	// on the node, as an application that needs it would send, again
	// until the replica has them: a loaded machine may be slow to).
	for start := time.Now(); ; {
		out, err := valkeytest.Do(victim.Addr, "WAIT", "1", "5000")
		if err == nil && out == "1\n" {
			break
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("WAIT: %q %v", out, err)
		}
	}
	resume := stopServer(t, victim)
	// A wait for the cluster's failover (a loaded machine may take long
	// to notice the stopped node), not a timing bound: the limit only
	// ends a test whose key never comes back.
	ok, last := false, ""
	for start := time.Now(); !ok && time.Since(start) < 3*time.Minute; {
		got := w.do("GET", key)
		last = got
		switch {
		case got == bulk("v"):
			ok = true
		case strings.HasPrefix(got, "-UPSTREAM") && !strings.Contains(got, " "+victim.Addr+" ") && !strings.Contains(got, " "+replica.Addr+" "):
			// The error names the node the key's slot led to, not the
			// configured upstream.
			t.Fatalf("GET during the failover names neither the stopped primary %s nor its replica %s: %q", victim.Addr, replica.Addr, got)
		case strings.HasPrefix(got, "-UPSTREAM"), strings.HasPrefix(got, "-CLUSTERDOWN"), strings.HasPrefix(got, "-TRYAGAIN"):
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatalf("GET during the failover: %q", got)
		}
	}
	if !ok {
		role, _ := valkeytest.Do(replica.Addr, "ROLE")
		nodes, _ := valkeytest.Do(replica.Addr, "CLUSTER", "NODES")
		t.Fatalf("the key never came back after the failover: last %q; the replica's ROLE %q; its CLUSTER NODES:\n%s", last, role, nodes)
	}
	if role, _ := valkeytest.Do(replica.Addr, "ROLE"); !strings.HasPrefix(role, "master\n") {
		t.Fatalf("the replica %s is not the primary: %q", replica.Addr, role)
	}
	mustContain(t, stranger.do("DEL", lock), "-NOTOWNER")
	eq(t, holder.do("DEL", lock), ":1\r\n")
	eq(t, w.do("DEL", key), ":1\r\n")
	resume()
	if err := cl.WaitOK(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.Failover(victim); err != nil { // back as it was
		t.Fatal(err)
	}
}

// A node that accepts the proxy's connection but does not answer it (here
// CLIENT PAUSE ALL, which the cluster bus does not notice, so no failover
// starts) gets its commands an UPSTREAM error that names that node, not the
// upstream the proxy was configured with; the other shards answer as ever.
func TestClusterUpstreamErrorNamesNode(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	m := slotMap(t, cl)
	var o proxy.Options
	o.Upstream.Cluster.Seeds = cl.Seeds()
	o.Upstream.ReplyTimeout, o.Upstream.DialTimeout = config.Duration(time.Second), config.Duration(time.Second)
	upstream, paused := cl.ByAddr(m.Primaries[0]), cl.ByAddr(m.Primaries[1])
	home, away := keysOn(m, upstream.Addr, "named:", 1)[0], keysOn(m, paused.Addr, "named:", 1)[0]
	// CLIENT UNPAUSE waits behind PAUSE ALL too: each pause runs out by
	// itself, and the next test starts once the node answers again.
	t.Cleanup(func() {
		for start := time.Now(); time.Since(start) < time.Minute; {
			if out, err := valkeytest.Do(paused.Addr, "PING"); err == nil && out == "PONG\n" {
				return
			}
		}
	})
	// A loaded machine may let the pause run out before the proxy's
	// connection: then a fresh proxy tries again.
	for attempt := 1; ; attempt++ {
		e := &env{t: t, srv: upstream}
		e.startProxy(o)
		c := dialRaw(t, e.addr)
		eq(t, c.do("GET", home), "$-1\r\n")
		if out, err := valkeytest.Do(paused.Addr, "CLIENT", "PAUSE", "10000", "ALL"); err != nil || out != "OK\n" {
			t.Fatalf("CLIENT PAUSE: %q %v", out, err)
		}
		got := c.do("GET", away)
		if got == "$-1\r\n" && attempt < 5 {
			continue
		}
		mustContain(t, got, "-UPSTREAM ")
		mustContain(t, got, " "+paused.Addr+" ")
		eq(t, c.do("GET", home), "$-1\r\n")
		return
	}
}

// A command sent under the old slot map and redirected runs before a later
// command of the same session that the new map sends straight to the slot's
// new primary: the session's commands run in its order, as on one server.
// The old primary postpones the first (CLIENT PAUSE WRITE) while the slot
// moves and the proxy reads the new map; then it answers MOVED.
func TestClusterRedirectKeepsOrder(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	m := slotMap(t, cl)
	src, dst := cl.ByAddr(m.Primaries[0]), cl.ByAddr(m.Primaries[1])
	k := keysOn(m, src.Addr, "order:", 1)[0]
	slot := int(cluster.Slot([]byte(k)))
	var o proxy.Options
	o.Upstream.Cluster.Seeds = cl.Seeds()
	o.Upstream.Cluster.Refresh = config.Duration(50 * time.Millisecond)
	e := &env{t: t, srv: src}
	e.startProxy(o)
	c, watch := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, c.do("GET", k), "$-1\r\n")
	eq(t, c.do("GET", keysOn(m, dst.Addr, "order:", 1)[0]), "$-1\r\n") // a connection to dst too
	defer func() {
		_, _ = valkeytest.Do(src.Addr, "CLIENT", "UNPAUSE")
		if err := cl.MigrateSlot(slot, src, nil); err != nil {
			t.Error(err)
		}
		_, _ = valkeytest.Do(src.Addr, "DEL", k)
	}()
	changes := infoInt(t, watch.do("INFO", "lockproxy"), "cluster_map_changes")
	if out, err := valkeytest.Do(src.Addr, "CLIENT", "PAUSE", "20000", "WRITE"); err != nil || out != "OK\n" {
		t.Fatalf("CLIENT PAUSE: %q %v", out, err)
	}
	c.send(string(redisCmd("SET", k, "new")))
	time.Sleep(100 * time.Millisecond) // at src, postponed
	srcID, err := valkeytest.NodeID(src)
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := valkeytest.NodeID(dst)
	if err != nil {
		t.Fatal(err)
	}
	// dst imports the slot (it holds no keys) and claims it, with a new
	// epoch that wins over src's; the others learn it from the bus.
	for _, st := range [][]string{{"IMPORTING", srcID}, {"NODE", dstID}} {
		if out, err := valkeytest.Do(dst.Addr, append([]string{"CLUSTER", "SETSLOT", strconv.Itoa(slot)}, st...)...); err != nil || out != "OK\n" {
			t.Fatalf("SETSLOT %s on %s: %q %v", st[0], dst.Addr, out, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for infoInt(t, watch.do("INFO", "lockproxy"), "cluster_map_changes") == changes {
		if time.Now().After(deadline) {
			var views []string
			for _, n := range cl.Nodes {
				out, err := valkeytest.Do(n.Addr, "CLUSTER", "NODES")
				views = append(views, fmt.Sprintf("%s: %v\n%s", n.Addr, err, out))
			}
			t.Fatalf("the proxy did not read the new slot map (slot %d to %s):\n%s\n%s", slot, dst.Addr, watch.do("INFO", "lockproxy"), strings.Join(views, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.send(string(redisCmd("GET", k)))
	time.Sleep(200 * time.Millisecond) // the GET would reach dst by now
	if out, err := valkeytest.Do(src.Addr, "CLIENT", "UNPAUSE"); err != nil || out != "OK\n" {
		t.Fatalf("CLIENT UNPAUSE: %q %v", out, err)
	}
	eq(t, c.read(), "+OK\r\n")
	eq(t, c.read(), bulk("new"))
}
