package admin

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// lockValkey starts a valkey-server and an Admin reading it under the rule
// lock:*.
func lockValkey(t *testing.T) (*Admin, *redis.Client) {
	t.Helper()
	srv := valkeytest.Start(t)
	side := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { side.Close() })
	rules, err := policy.NewRules([]policy.LockRule{{Pattern: "lock:*"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &testHost{side: side, decider: &rewrite.Decider{Rules: rules}, events: telemetry.NewRing(16),
		sessions: []Session{{ID: 1, Addr: "127.0.0.1:40000", Host: "127.0.0.1", Owner: "conn:i-1"}}}
	return New(h, Options{Loopback: true, Limiter: noLimit{}}, configOf()), side
}

// grant writes what lockproxy's Acquire script leaves: the lock's value,
// its counter at grant, and owner's record, with a lease of lease (0: no
// lease end).
func grant(t *testing.T, c *redis.Client, lock, owner, value string, g int64, acquired time.Time, lease time.Duration) {
	t.Helper()
	ctx := context.Background()
	end := int64(0)
	if lease > 0 {
		end = acquired.Add(lease).UnixMilli()
	}
	rec := fmt.Sprintf("%d %d %d %s", g, acquired.UnixMilli(), end, value)
	if err := c.Set(ctx, lock, value, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, string(rewrite.CounterKey([]byte(lock))), g, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, string(rewrite.RecordsKey([]byte(lock))), owner, rec).Err(); err != nil {
		t.Fatal(err)
	}
}

// The records are read through the index; records written before it
// existed are found once by SCAN, and an index member whose records are
// gone leaves it. Only running leases are listed, current when the key and
// counter still hold the record's grant.
func TestReadLocks(t *testing.T) {
	a, c := lockValkey(t)
	ctx := context.Background()
	now := time.Now()
	grant(t, c, "lock:a", "conn:i-1", "tok-a", 5, now.Add(-time.Second), 30*time.Second)
	grant(t, c, "lock:b", "conn:i-1", "tok-b", 2, now.Add(-time.Minute), time.Second) // lapsed
	grant(t, c, "lock:c", "addr:10.0.0.2", "tok-c", 8, now, 0)                        // no lease end
	c.Incr(ctx, string(rewrite.CounterKey([]byte("lock:c"))))                         // a newer grant since
	gone := string(rewrite.RecordsKey([]byte("lock:gone")))
	c.ZAdd(ctx, rewrite.StandaloneIndexKey, redis.Z{Member: gone})

	locks, err := a.readLocks(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range locks {
		got = append(got, fmt.Sprintf("%s %s %d current=%v", l.key, l.owner, l.grant, l.current))
	}
	want := []string{"lock:a conn:i-1 5 current=true", "lock:c addr:10.0.0.2 8 current=false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("locks:\n got %q\nwant %q", got, want)
	}
	if s, err := c.ZScore(ctx, rewrite.StandaloneIndexKey, rewrite.IndexedMember).Result(); err != nil || !math.IsInf(s, 1) {
		t.Errorf("index not marked as complete: %v %v", s, err)
	}
	if err := c.ZScore(ctx, rewrite.StandaloneIndexKey, gone).Err(); err != redis.Nil {
		t.Errorf("a member whose records are gone stays in the index: %v", err)
	}
	if locks, _ := a.readLocks(0, policy.CompileAny("lock:c")); len(locks) != 1 || locks[0].key != "lock:c" {
		t.Errorf("pattern lock:c: %v", locks)
	}

	// Records written after the index was complete are listed only by
	// REINDEX.
	grant(t, c, "lock:d", "conn:i-1", "tok-d", 1, now, 30*time.Second)
	if locks, _ := a.readLocks(0, policy.CompileAny("lock:d")); len(locks) != 0 {
		t.Errorf("unindexed lock:d listed before REINDEX: %v", locks)
	}
	reply := string(a.reindex(testConn{id: 1}, nil))
	if want := "*6\r\n$7\r\nservers\r\n$1\r\n1\r\n$13\r\nrecords_found\r\n$1\r\n4\r\n$5\r\nadded\r\n$1\r\n1\r\n"; reply != want {
		t.Errorf("REINDEX: %q, want %q", reply, want)
	}
	if locks, _ := a.readLocks(0, policy.CompileAny("lock:d")); len(locks) != 1 {
		t.Errorf("lock:d after REINDEX: %v", locks)
	}

	// LOCKS names this instance's connection by its address.
	if r := string(a.locks(testConn{id: 1, proto: 3}, [][]byte{[]byte("lock:a")})); !strings.Contains(r, "$6\r\nholder\r\n$15\r\n127.0.0.1:40000\r\n") ||
		!strings.Contains(r, "$7\r\ncurrent\r\n$3\r\nyes\r\n") {
		t.Errorf("LOCKS lock:a: %q", r)
	}
}

// FENCE answers the caller's own grant from its record, nil without one.
func TestFence(t *testing.T) {
	a, c := lockValkey(t)
	grant(t, c, "lock:a", "conn:i-1", "tok-a", 7, time.Now(), 30*time.Second)
	cases := []struct {
		conn testConn
		key  string
		want string
	}{
		{testConn{id: 1, owner: "conn:i-1"}, "lock:a", ":7\r\n"},
		{testConn{id: 2, owner: "conn:i-2"}, "lock:a", "$-1\r\n"},
		{testConn{id: 1, owner: "conn:i-1", proto: 3}, "nolock:a", "_\r\n"},
	}
	for _, tc := range cases {
		var missing []string
		tc.conn.missing = &missing
		if got := string(a.fence(tc.conn, [][]byte{[]byte(tc.key)})); got != tc.want {
			t.Errorf("FENCE %s as %s: %q, want %q", tc.key, tc.conn.owner, got, tc.want)
		}
		// Told only when a rule matches and Valkey has no record.
		if told := len(missing) == 1 && missing[0] == tc.key; told != (tc.conn.owner == "conn:i-2") {
			t.Errorf("FENCE %s as %s: FoundMissing told %q", tc.key, tc.conn.owner, missing)
		}
	}
}
