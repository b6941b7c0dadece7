package admin

import (
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

func TestParseRecord(t *testing.T) {
	cases := []struct {
		rec      string
		ok       bool
		grant    int64
		acquired int64 // ms
		leaseEnd int64 // ms; 0: none
		value    string
	}{
		{"7 1700000000000 1700000030000 tok en", true, 7, 1700000000000, 1700000030000, "tok en"},
		{"1 1700000000000 0 v", true, 1, 1700000000000, 0, "v"},
		{"1 1700000000000 -1 v", true, 1, 1700000000000, 0, "v"},
		{"1 1700000000000 0 ", true, 1, 1700000000000, 0, ""},
		{"1 1700000000000 0", false, 0, 0, 0, ""},
		{"x 1700000000000 0 v", false, 0, 0, 0, ""},
		{"1 y 0 v", false, 0, 0, 0, ""},
		{"1 2 z v", false, 0, 0, 0, ""},
		{"", false, 0, 0, 0, ""},
	}
	for _, c := range cases {
		lv, ok := parseRecord(c.rec)
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.rec, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if lv.grant != c.grant || !lv.acquired.Equal(time.UnixMilli(c.acquired)) || lv.value != c.value {
			t.Errorf("%q: got grant %d acquired %v value %q", c.rec, lv.grant, lv.acquired, lv.value)
		}
		if c.leaseEnd == 0 && !lv.leaseEnd.IsZero() || c.leaseEnd != 0 && !lv.leaseEnd.Equal(time.UnixMilli(c.leaseEnd)) {
			t.Errorf("%q: lease end %v, want %d ms", c.rec, lv.leaseEnd, c.leaseEnd)
		}
	}
}

// A records key is found back to its lock only when a rule matches the
// lock and the lock's records key is that one: plain, hash-tagged, and a
// name ending in '}'.
func TestLockOfRecords(t *testing.T) {
	rules, err := policy.NewRules([]policy.LockRule{{Pattern: "lock:*"}, {Pattern: "{t}:*"}, {Pattern: "x}"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ rk, lock, rule string }{
		{"{lock:a}:lockproxy:owners", "lock:a", "lock:*"},
		{"{t}:a:lockproxy:owners", "{t}:a", "{t}:*"},
		{string(rewrite.RecordsKey([]byte("{t}:b}"))), "{t}:b}", "{t}:*"},
		{string(rewrite.RecordsKey([]byte("x}"))), "x}", "x}"},
		{"lock:a:lockproxy:owners", "", ""}, // a rule matches, but not lock:a's records key
		{"{other}:lockproxy:owners", "", ""},
		{"lock:a", "", ""},
	}
	for _, c := range cases {
		lock, r := lockOfRecords(rules, c.rk)
		rule := ""
		if r != nil {
			rule = r.Pattern.String()
		}
		if lock != c.lock || rule != c.rule {
			t.Errorf("%q: got %q (rule %q), want %q (rule %q)", c.rk, lock, rule, c.lock, c.rule)
		}
	}
}

func TestOwnerClient(t *testing.T) {
	clients := ownerClients([]Session{{ID: 1, Addr: "10.0.0.1:5000", Name: "worker", Owner: "conn:i-1"}})
	cases := []struct{ owner, addr, name string }{
		{"addr:10.0.0.9", "10.0.0.9", ""},
		{"name:job", "", "job"},
		{"conn:i-1", "10.0.0.1:5000", "worker"},
		{"conn:other-1", "", ""},
	}
	for _, c := range cases {
		if a, n := ownerClient(clients, c.owner); a != c.addr || n != c.name {
			t.Errorf("%q: got %q %q, want %q %q", c.owner, a, n, c.addr, c.name)
		}
	}
}
