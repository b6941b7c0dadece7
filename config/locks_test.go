package config

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/policy"
)

// A fence template policy refuses is reported at its line in the file.
func TestFenceErrorNamesTheLine(t *testing.T) {
	_, err := Parse("f.yaml", []byte("locks:\n  - pattern: \"{*}:lock\"\n    fence:\n      counter: \"{x}{base}\"\n"))
	if err == nil || !strings.Contains(err.Error(), "f.yaml:3: locks[0].fence: ") || !strings.Contains(err.Error(), "hash slot") {
		t.Errorf("config error: %v", err)
	}
}

// Rules hands policy the file's rules whole: durations as time.Duration,
// sections copied, defaults applied.
func TestRulesFromFile(t *testing.T) {
	c, err := Parse("r.yaml", []byte(`locks:
  - pattern: "{*}:lock"
    max_lease: 30s
    durability: {replicas: 1, timeout: 100ms}
    fence: {counter: "{base}:fence", guards: ["{base}:*"], check: highest}
`))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := c.Rules()
	if err != nil {
		t.Fatal(err)
	}
	r := rules.All()[0]
	if r.MaxLease != 30*time.Second || r.Durability == nil || r.Durability.Timeout != 100*time.Millisecond || r.Durability.Replicas != 1 {
		t.Errorf("rule = %+v, durability %+v", r, r.Durability)
	}
	if r.Fence == nil || r.Fence.Check != policy.FenceCheckHighest || r.Fence.Mark != policy.FenceMarkLock || r.Fencing == nil {
		t.Errorf("fence = %+v", r.Fence)
	}
	c.Locks[0].Fence.Guards[0] = "changed"
	if r.Fence.Guards[0] != "{base}:*" {
		t.Error("the rules share the file's guard list")
	}
}

// Every session scope is a word of the file, session: user among them
// (issue 38 item 6), and reaches the rule as it was written.
func TestSessionScopes(t *testing.T) {
	for _, s := range []policy.SessionMode{policy.SessionConnection, policy.SessionClientName, policy.SessionClientAddr, policy.SessionUser} {
		c, err := Parse("s.yaml", []byte("locks:\n  - pattern: \"*:lock\"\n    session: "+string(s)+"\n"))
		if err != nil {
			t.Fatalf("session: %s: %v", s, err)
		}
		rules, err := c.Rules()
		if err != nil {
			t.Fatal(err)
		}
		if got := rules.All()[0].Session; got != s {
			t.Errorf("session: %s reached the rule as %q", s, got)
		}
	}
}
