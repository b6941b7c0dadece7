package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
)

// A Redisson-style hash lock (a hash with one field per owner, taken by a
// script) is refused to strangers as before: HDEL, HINCRBY and HSET are of
// the lock's own type, so Valkey has no WRONGTYPE to give and the refusal
// stands; DEL is refused as any release without the token. A list command
// on it gets Valkey's WRONGTYPE, and nothing changed.
func TestWrongTypeKeepsHashLockRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		opts := rulesOptions(t, rule("rewrite"))
		opts.EventLoops, opts.BusyPoll = o.EventLoops, o.BusyPoll
		e := newEnv(t, opts)
		owner, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, owner.do("EVAL", luaFile(t, "hash_lock.lua"), "1", "h:lock", "30000", "owner-1"), "$-1\r\n")
		for _, c := range [][]string{
			{"HDEL", "h:lock", "owner-1"},
			{"HINCRBY", "h:lock", "owner-1", "1"},
			{"HSET", "h:lock", "owner-2", "1"},
			{"DEL", "h:lock"},
		} {
			got := stranger.do(c...)
			if !strings.HasPrefix(got, "-LOCKED ") && !strings.HasPrefix(got, "-NOTOWNER ") {
				t.Errorf("stranger's %q: %q, want a refusal", c, got)
			}
		}
		eq(t, stranger.do("LPOP", "h:lock"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
		eq(t, stranger.do("SADD", "h:lock", "m"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
		eq(t, stranger.do("HGET", "h:lock", "owner-1"), bulk("1"))
		d := e.direct()
		eq(t, d.HGetAll(ctx, "h:lock").Val()["owner-1"], "1")
		eq(t, d.HLen(ctx, "h:lock").Val(), int64(1))
		// An absent lock key: LPUSH would create it, so it stays refused.
		got := stranger.do("LPUSH", "gone:lock", "x")
		if !strings.HasPrefix(got, "-LOCKED ") {
			t.Errorf("LPUSH of an absent lock key: %q", got)
		}
		eq(t, d.Exists(ctx, "gone:lock").Val(), int64(0))
		if !hasEvent(e, proxy.OutcomeRefused, "gone:lock") {
			t.Error("the refusal of LPUSH was not recorded")
		}
	})
}
