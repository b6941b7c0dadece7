package e2e_test

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// The locks' index (rewrite/index.go): LOCKPROXY LOCKS, STATS and SESSIONS
// read the records keys lockproxy's scripts list there, not the keyspace.

// lockedKeys are the keys LOCKPROXY LOCKS [pattern] lists, sorted, once each.
func lockedKeys(t *testing.T, c *redis.Client, pattern ...any) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range recs(t, admin(t, c, append([]any{"LOCKS"}, pattern...)...)) {
		seen[l["key"]] = true
	}
	out := []string{}
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// commandCalls reads INFO commandstats: calls by command name (lower case).
func commandCalls(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		out[strings.TrimPrefix(name, "cmdstat_")] = n
	}
	return out
}

// indexed is what the index of a Valkey that is not a cluster lists.
func indexed(t *testing.T, d *redis.Client) []string {
	t.Helper()
	m, err := d.ZRange(ctx, rewrite.StandaloneIndexKey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

func recsKey(lock string) string { return string(rewrite.RecordsKey([]byte(lock))) }

// sorted joins members as indexed lists them.
func sorted(members ...string) string {
	sort.Strings(members)
	return strings.Join(members, " ")
}

// Acquisitions list a lock, releases (DEL, a lease ended by its holder, a
// release inside a script) take it out; a lapsed lease is not listed.
// LOCKS, STATS and SESSIONS agree with what is held, through either engine.
func TestLocksIndexFollowsLocks(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	c, d := e.client(), e.direct()
	a, b := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "a:lock", "va", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, a.do("SET", "b:lock", "vb", "NX"), "+OK\r\n") // no lease
	eq(t, b.do("SET", "c:lock", "vc", "NX", "PX", "1"), "+OK\r\n")
	eq(t, b.do("EVAL", "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', 60000)", "1", "s:lock", "vs"), "+OK\r\n")
	eq(t, b.do("SET", "d:lock", "vd", "NX", "PX", "60000"), "+OK\r\n")
	for d.Exists(ctx, "c:lock").Val() == 1 {
		time.Sleep(5 * time.Millisecond) // c's lease runs out
	}
	eq(t, strings.Join(lockedKeys(t, c), " "), "a:lock b:lock d:lock s:lock")
	eq(t, rec(t, admin(t, c, "STATS"))["locks_held"], "4")
	// A member's score is when its records expire (exactly, as a grant
	// leaves them), +inf for a lock without a lease.
	for _, l := range []string{"a:lock", "s:lock"} {
		at, _ := d.Do(ctx, "PEXPIRETIME", recsKey(l)).Int64()
		eq(t, int64(d.ZScore(ctx, rewrite.StandaloneIndexKey, recsKey(l)).Val()), at)
	}
	eq(t, math.IsInf(d.ZScore(ctx, rewrite.StandaloneIndexKey, recsKey("b:lock")).Val(), 1), true)

	eq(t, a.do("DEL", "a:lock"), ":1\r\n")
	eq(t, b.do("PEXPIRE", "d:lock", "0"), ":1\r\n") // the holder ends its lease
	eq(t, b.do("EVAL", "return redis.call('DEL', KEYS[1])", "1", "s:lock"), ":1\r\n")
	eq(t, strings.Join(lockedKeys(t, c), " "), "b:lock")
	eq(t, strings.Join(lockedKeys(t, c, "nothing:*"), " "), "")
	eq(t, rec(t, admin(t, c, "STATS"))["locks_held"], "1")
	// Only c's records are left beside b's (kept keep_lapsed after its
	// lease): the releases took theirs out.
	eq(t, strings.Join(indexed(t, d), " "), sorted(recsKey("b:lock"), recsKey("c:lock"), rewrite.IndexedMember))
	sessions := fmt.Sprint(admin(t, c, "SESSIONS"))
	mustContain(t, sessions, "b:lock grant")
	if strings.Contains(sessions, "a:lock grant") {
		t.Errorf("SESSIONS lists a released lock: %s", sessions)
	}
	eq(t, a.do("DEL", "b:lock"), ":1\r\n")
	eq(t, strings.Join(lockedKeys(t, c), " "), "")
	// Clients may read the index, never write it.
	mustContain(t, a.do("ZRANGE", rewrite.StandaloneIndexKey, "0", "-1"), recsKey("c:lock"))
	mustContain(t, a.do("ZADD", rewrite.StandaloneIndexKey, "1", "x"), "-LOCKED lockproxy refused ZADD")
	mustContain(t, a.do("EVAL", "return redis.call('DEL', KEYS[1])", "1", rewrite.StandaloneIndexKey), "-LOCKED lockproxy refused EVAL")
	mustContain(t, a.do("EVAL", "return redis.call('DEL', ARGV[1])", "0", rewrite.StandaloneIndexKey), "-LOCKED lockproxy refused DEL")
}

// With 200,000 keys that are not locks, LOCKS, STATS and SESSIONS read the
// index and the few locks it lists: Valkey runs no SCAN (on main each of
// them walked the keyspace with SCAN).
func TestLocksReadNoScan(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	c, d := e.client(), e.direct()
	populate(t, e, 200000)
	a := dialRaw(t, e.addr)
	for i := range 3 {
		eq(t, a.do("SET", fmt.Sprintf("n%d:lock", i), "v", "NX", "PX", "60000"), "+OK\r\n")
	}
	eq(t, strings.Join(lockedKeys(t, c), " "), "n0:lock n1:lock n2:lock") // the first read may look for records older than the index
	if err := d.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	eq(t, strings.Join(lockedKeys(t, c), " "), "n0:lock n1:lock n2:lock")
	eq(t, rec(t, admin(t, c, "STATS"))["locks_held"], "3")
	mustContain(t, fmt.Sprint(admin(t, c, "SESSIONS")), "n1:lock grant")
	calls := commandCalls(t, d)
	for _, cmd := range []string{"scan", "keys"} {
		if calls[cmd] != 0 {
			t.Errorf("LOCKS, STATS and SESSIONS ran %s %d times: %v", cmd, calls[cmd], calls)
		}
	}
	eq(t, calls["zrange"], 3) // one page of the index for each
	eq(t, calls["hgetall"], 9)
}

// Records written before the index existed (by an older lockproxy: here
// written straight into Valkey) are found by one SCAN, at the first read;
// later ones only by LOCKPROXY REINDEX, which an operator runs once a
// rolling upgrade is done.
func TestLocksIndexOlderRecords(t *testing.T) {
	e := newEnv(t, rulesOptions(t, abRules))
	c, d := e.client(), e.direct()
	old := func(lock string) {
		t.Helper()
		now := time.Now().UnixMilli()
		if err := d.Set(ctx, lock, "old", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		d.Set(ctx, string(rewrite.CounterKey([]byte(lock))), "7", 0)
		d.HSet(ctx, recsKey(lock), "name:older", fmt.Sprintf("7 %d %d old", now, now+60000))
		d.PExpire(ctx, recsKey(lock), 2*time.Minute)
	}
	old("old1:lock")
	eq(t, dialRaw(t, e.addr).do("SET", "new:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, strings.Join(lockedKeys(t, c), " "), "new:lock old1:lock")
	eq(t, commandCalls(t, d)["scan"] > 0, true)
	l := recs(t, admin(t, c, "LOCKS", "old1:*"))[0]
	eq(t, l["owner"]+" "+l["grant"]+" "+l["current"], "name:older 7 yes")

	old("old2:lock") // an older instance still running
	d.ConfigResetStat(ctx)
	eq(t, strings.Join(lockedKeys(t, c), " "), "new:lock old1:lock")
	eq(t, commandCalls(t, d)["scan"], 0)
	r := rec(t, admin(t, c, "REINDEX"))
	eq(t, r["records_found"]+" "+r["added"], "3 1")
	eq(t, strings.Join(lockedKeys(t, c), " "), "new:lock old1:lock old2:lock")
}

// The index does not keep what expired unreleased: an acquisition looks at
// the members whose records may have expired, and a member whose records
// are gone leaves it; a reader takes out those it finds gone.
func TestLocksIndexPrunesExpired(t *testing.T) {
	opts := rulesOptions(t, abRules)
	opts.Config.KeepLapsed = config.Duration(50 * time.Millisecond)
	e := newEnv(t, opts)
	c, d := e.client(), e.direct()
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "x:lock", "v", "NX", "PX", "20"), "+OK\r\n")
	eq(t, a.do("SET", "w:lock", "v", "NX", "PX", "20"), "+OK\r\n")
	eq(t, a.do("SET", "held:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	for d.Exists(ctx, recsKey("x:lock"), recsKey("w:lock")).Val() > 0 {
		time.Sleep(10 * time.Millisecond) // lease and keep_lapsed run out
	}
	eq(t, strings.Join(indexed(t, d), " "), sorted(recsKey("held:lock"), recsKey("w:lock"), recsKey("x:lock")))
	eq(t, a.do("SET", "y:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, strings.Join(indexed(t, d), " "), sorted(recsKey("held:lock"), recsKey("y:lock")))

	eq(t, a.do("SET", "z:lock", "v", "NX", "PX", "20"), "+OK\r\n")
	for d.Exists(ctx, recsKey("z:lock")).Val() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	eq(t, strings.Join(lockedKeys(t, c), " "), "held:lock y:lock")
	eq(t, strings.Join(indexed(t, d), " "), sorted(recsKey("held:lock"), recsKey("y:lock"), rewrite.IndexedMember))
}

// A Valkey user whose key patterns leave out the index still runs the
// locks (the scripts take the index among their ARGV and only leave it
// unwritten); LOCKS then says which right it needs.
func TestLocksIndexWithoutACLRight(t *testing.T) {
	srv := valkeytest.Start(t)
	admin0 := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin0.Close()
	if err := admin0.Do(ctx, "ACL", "SETUSER", "narrow", "on", ">pw", "resetkeys", "~*:lock", "~{*:lock}:lockproxy:*",
		"resetchannels", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	opts := rulesOptions(t, abRules)
	opts.Upstream.Username, opts.Upstream.Password = "narrow", "pw"
	e := &env{t: t, srv: srv}
	e.startProxy(opts)
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "acl:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, a.do("DEL", "acl:lock"), ":1\r\n")
	eq(t, a.do("SET", "acl:lock", "v", "NX", "PX", "60000"), "+OK\r\n")
	eq(t, a.do("PEXPIRE", "acl:lock", "0"), ":1\r\n")
	_, err := e.client().Do(ctx, "LOCKPROXY", "LOCKS").Result()
	if err == nil || !strings.Contains(err.Error(), "NOPERM") || !strings.Contains(err.Error(), "lockproxy:index") {
		t.Errorf("LOCKS without the right to the index: %v", err)
	}
}

// In front of a cluster each slot has its index, in that slot: LOCKS
// lists exactly the locks held on every primary, and no primary runs SCAN
// once they are indexed.
func TestClusterLocksIndex(t *testing.T) {
	e, cl := clusterEnv(t, rulesOptions(t, rule("rewrite")))
	m := slotMap(t, cl)
	c := e.client()
	a := dialRaw(t, e.addr)
	var locks []string
	for _, p := range m.Primaries {
		for _, k := range keysOn(m, p, "cidx:", 2) {
			lock := k + ":lock"
			for at, _ := m.Primary(cluster.Slot([]byte(lock))); at != p; at, _ = m.Primary(cluster.Slot([]byte(lock))) {
				lock = "x" + lock
			}
			locks = append(locks, lock)
			eq(t, a.do("SET", lock, "v", "NX", "PX", "60000"), "+OK\r\n")
			idx := rewrite.SlotIndexKey(cluster.Slot([]byte(lock)))
			eq(t, cluster.Slot([]byte(idx)), cluster.Slot([]byte(lock)))
			mustContain(t, directTo(t, m, lock, "ZRANGE", idx, "0", "-1"), recsKey(lock))
		}
	}
	sort.Strings(locks)
	find := func() string { return strings.Join(lockedKeys(t, c, "*cidx:*"), " ") }
	got := strings.Fields(find())
	sort.Strings(got)
	eq(t, strings.Join(got, " "), strings.Join(locks, " "))
	nodes := map[string]*redis.Client{}
	for _, p := range m.Primaries {
		n := redis.NewClient(&redis.Options{Addr: p})
		defer n.Close()
		nodes[p] = n
		n.ConfigResetStat(ctx)
	}
	got = strings.Fields(find())
	eq(t, len(got), len(locks))
	for p, n := range nodes {
		if s := commandCalls(t, n)["scan"]; s != 0 {
			t.Errorf("primary %s ran SCAN %d times for LOCKS", p, s)
		}
	}
	for _, l := range locks {
		eq(t, a.do("DEL", l), ":1\r\n")
		if strings.Contains(directTo(t, m, l, "ZRANGE", rewrite.SlotIndexKey(cluster.Slot([]byte(l))), "0", "-1"), recsKey(l)) {
			t.Errorf("%s is still in its slot's index after its release", l)
		}
	}
	eq(t, find(), "")

	// Records an older lockproxy wrote (straight into a primary here):
	// REINDEX scans every primary and lists them in their slots' indexes.
	old := locks[0]
	now := time.Now().UnixMilli()
	directTo(t, m, old, "SET", old, "old", "PX", "60000")
	directTo(t, m, old, "HSET", recsKey(old), "name:older", fmt.Sprintf("%d %d %d old", 9, now, now+60000))
	r := rec(t, admin(t, c, "REINDEX"))
	eq(t, r["servers"], strconv.Itoa(len(m.Primaries)))
	eq(t, r["added"], "1")
	eq(t, find(), old)
	mustContain(t, a.do("DEL", old), "-NOTOWNER") // another owner's
	directTo(t, m, old, "DEL", old, recsKey(old))
	eq(t, find(), "")
}

// The first read's SCAN stops after half the command's deadline and
// answers INDEXING; the next read goes on where it stopped, until the
// records written before the index are all listed. (Here the deadline is
// short, 4 × dial_timeout = 600 ms, and the keyspace 1,000,000 keys: on
// this machine the SCAN takes about 0.7 s, so it usually takes two reads;
// a faster one may list them at once.)
func TestLocksIndexScanResumes(t *testing.T) {
	opts := rulesOptions(t, abRules)
	opts.Upstream.DialTimeout = config.Duration(150 * time.Millisecond)
	e := newEnv(t, opts)
	c, d := e.client(), e.direct()
	populate(t, e, 1000000)
	now := time.Now().UnixMilli()
	d.Set(ctx, "old:lock", "old", time.Minute)
	d.Set(ctx, string(rewrite.CounterKey([]byte("old:lock"))), "3", 0)
	d.HSet(ctx, recsKey("old:lock"), "name:older", fmt.Sprintf("3 %d %d old", now, now+60000))
	// Each read goes on with the SCAN; a loaded machine may need many.
	// The limit only ends a test whose reads never finish the listing.
	indexing := 0
	for start := time.Now(); ; {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("LOCKS still indexing after %d reads", indexing)
		}
		v, err := c.Do(ctx, "LOCKPROXY", "LOCKS").Result()
		if err != nil {
			mustContain(t, err.Error(), "INDEXING lockproxy is still listing the lock records written before the locks' index")
			indexing++
			continue
		}
		eq(t, fmt.Sprint(recs(t, v)[0]["key"]), "old:lock")
		break
	}
	t.Logf("%d reads answered INDEXING", indexing)
	d.ConfigResetStat(ctx)
	eq(t, strings.Join(lockedKeys(t, c), " "), "old:lock")
	eq(t, commandCalls(t, d)["scan"], 0)
}

// populate fills the server with n keys that are no locks (DEBUG POPULATE),
// with a reply deadline a loaded machine cannot miss (go-redis's default
// of 3 s ended TestLocksIndexScanResumes in a loaded make test).
func populate(t *testing.T, e *env, n int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: e.srv.Addr, MaxRetries: -1, ReadTimeout: 2 * time.Minute})
	defer c.Close()
	if err := c.Do(ctx, "DEBUG", "POPULATE", strconv.Itoa(n), "other").Err(); err != nil {
		t.Fatal(err)
	}
}
