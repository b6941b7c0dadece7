package e2e_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockproxy/lockproxy/rewrite"
)

// A script's grant writes its record into the lock's records hash and
// learns whether that hash is new from the locks' index (monitor.lua: the
// index lists every records hash there is, so a ZADD that adds the member
// found none). A hash that still holds another owner's record is listed,
// so the grant marks that record lapsed, as the plain SET NX's does; a
// hash the index does not list (written before the index existed) is
// taken for new, and the grant is still right: the counter and the new
// record say who holds the lock, and the holder releases it.
func TestScriptGrantOverOldRecords(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n"))
	d := e.direct()
	a := dialRaw(t, e.addr)

	// leaseEnd is the lease end in owner's record of lock.
	leaseEnd := func(t *testing.T, lock, owner string) int64 {
		t.Helper()
		f := strings.SplitN(records(t, d, lock)[owner], " ", 4)
		if len(f) != 4 {
			t.Fatalf("record of %q: %q", owner, records(t, d, lock)[owner])
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("listed", func(t *testing.T) {
		eq(t, a.do("SET", "so:lock", "first", "NX", "PX", "60000"), "+OK\r\n")
		owners := records(t, d, "so:lock")
		eq(t, len(owners), 1)
		var first string
		for o := range owners {
			first = o
		}
		before := leaseEnd(t, "so:lock", first)
		// The lock goes without its holder's release (deleted around
		// lockproxy): the record stays, its lease still running.
		eq(t, d.Del(ctx, "so:lock").Val(), int64(1))
		l, err := redislock.New(e.client()).Obtain(ctx, "so:lock", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, grants(t, d, "so:lock"), "2")
		eq(t, len(records(t, d, "so:lock")), 2)
		if after := leaseEnd(t, "so:lock", first); after >= before {
			t.Errorf("the first holder's record was not marked lapsed: lease end %d, was %d", after, before)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		eq(t, len(records(t, d, "so:lock")), 1)
	})

	t.Run("not listed", func(t *testing.T) {
		eq(t, a.do("SET", "su:lock", "first", "NX", "PX", "60000"), "+OK\r\n")
		eq(t, d.Del(ctx, "su:lock").Val(), int64(1))
		// As a records hash written before the index existed.
		eq(t, d.ZRem(ctx, rewrite.StandaloneIndexKey, recsKey("su:lock")).Val(), int64(1))
		c := e.client()
		l, err := redislock.New(c).Obtain(ctx, "su:lock", 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, grants(t, d, "su:lock"), "2")
		eq(t, len(records(t, d, "su:lock")), 2)
		eq(t, c.Do(ctx, "LOCKPROXY", "FENCE", "su:lock").Val(), int64(2))
		if ttl := d.PTTL(ctx, recsKey("su:lock")).Val(); ttl <= 0 {
			t.Errorf("records hash without an expiry: %v", ttl)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		eq(t, len(records(t, d, "su:lock")), 1)
	})
}
