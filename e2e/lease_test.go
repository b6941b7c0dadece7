package e2e_test

import (
	"testing"
)

// max_lease bounds every lease a rule's locks get, not only an
// acquisition's (issue 29, item 3: "refuses longer leases"): the lock
// delay after a change of primary waits max_lease, so a holder that
// renewed its lock for longer, or made it lease-less, and lost that in a
// failover would still believe in it when the delay ends and the lock is
// granted to someone else. Renewals by command and inside scripts that
// leave a lease longer than max_lease, or none, are refused (LEASE); the
// lock keeps its lease. On main PEXPIRE 100000 and PERSIST passed.
func TestMaxLeaseBoundsRenewals(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:mutex\"\n    max_lease: 30s\n"))
	d := e.direct()
	h := dialRaw(t, e.addr)
	const lock = "r:mutex"
	eq(t, h.do("SET", lock, "h", "NX", "PX", "10000"), "+OK\r\n")
	for _, c := range [][]string{
		{"PEXPIRE", lock, "30001"},
		{"EXPIRE", lock, "31"},
		{"PERSIST", lock},
		{"GETEX", lock, "PERSIST"},
		{"GETEX", lock, "EX", "3600"},
		{"SET", lock, "h", "XX"},
		{"SET", lock, "h", "XX", "PX", "60000"},
	} {
		mustContain(t, h.do(c...), "-LEASE lockproxy refused "+c[0]+" of \""+lock+"\": it would give the lock a lease longer than 30000 ms, or none")
	}
	for _, body := range []string{
		"return redis.call('PEXPIRE', KEYS[1], 30001)",
		"return redis.call('PERSIST', KEYS[1])",
		"return redis.call('SET', KEYS[1], ARGV[1], 'XX')",
		"return redis.pcall('EXPIRE', KEYS[1], 3600)",
	} {
		mustContain(t, h.do("EVAL", body, "1", lock, "h"), "-LEASE lockproxy refused ")
	}
	if ttl := d.PTTL(ctx, lock).Val().Milliseconds(); ttl <= 0 || ttl > 10000 {
		t.Fatalf("the lock's lease changed: %d ms left", ttl)
	}
	eq(t, d.Get(ctx, lock).Val(), "h")
	// Within max_lease: renewed, by command and by script.
	eq(t, h.do("PEXPIRE", lock, "30000"), ":1\r\n")
	eq(t, h.do("EVAL", "return redis.call('PEXPIRE', KEYS[1], 20000)", "1", lock), ":1\r\n")
	eq(t, h.do("SET", lock, "h", "XX", "KEEPTTL"), "+OK\r\n")
	eq(t, h.do("GETEX", lock, "PX", "15000"), "$1\r\nh\r\n")
	eq(t, h.do("DEL", lock), ":1\r\n")
}
