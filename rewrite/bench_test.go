package rewrite_test

import (
	"testing"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// plainConfig is the common deployment: one rule, no fencing.
const plainConfig = `
locks:
  - pattern: "*:lock"
`

// TestDecideNoAlloc: commands on non-lock keys cost the proxy no garbage,
// with or without fencing rules (which make every write look for guards).
func TestDecideNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	alice, _, _ := sessions()
	for _, c := range []struct {
		config string
		args   []string
	}{
		{plainConfig, []string{"GET", "user:42:name"}},
		{plainConfig, []string{"SET", "user:42:name", "alice"}},
		{plainConfig, []string{"SET", "user:42:name", "alice", "NX", "PX", "1000"}},
		{plainConfig, []string{"DEL", "user:42:name", "user:43:name"}},
		{plainConfig, []string{"MGET", "a", "b", "c"}},
		{testConfig, []string{"GET", "user:42:name"}},
		{testConfig, []string{"SET", "user:42:name", "alice"}},
		{testConfig, []string{"GET", "{r}:data"}},
		{testConfig, []string{"HSET", "{r}:other", "f", "v"}},
	} {
		d := testDecider(t, c.config, "")
		args := bs(c.args...)
		scratch := make([]keyspec.Key, 0, 8)
		var p rewrite.Plan
		n := testing.AllocsPerRun(1000, func() { p = d.Decide(args, alice, scratch) })
		if n != 0 {
			t.Errorf("%s: Decide(%q) allocates %v times per call", firstWord(c.config), c.args, n)
		}
		if p.Kind != rewrite.Forward || len(p.Effects) != 0 {
			t.Errorf("Decide(%q) = %+v, want a plain Forward", c.args, p)
		}
	}
}

func firstWord(config string) string {
	if config == plainConfig {
		return "plain rules"
	}
	return "fencing rules"
}

// ownerSession is a Session as cheap as the proxy's: its owner is a
// string it already has, so the benchmarks and budgets measure Decide.
// A pointer, so that passing it as a Session allocates nothing.
type ownerSession struct{ owner string }

func (s *ownerSession) Owner(*policy.Rule) string { return s.owner }
func (s *ownerSession) Proto() int                { return 2 }

func BenchmarkDecide(b *testing.B) {
	alice := &ownerSession{"conn:alice"}
	for _, c := range []struct {
		name, config string
		args         []string
		kind         rewrite.Kind
	}{
		{"GET-nonlock", plainConfig, []string{"GET", "user:42:name"}, rewrite.Forward},
		{"SET-nonlock", plainConfig, []string{"SET", "user:42:name", "alice"}, rewrite.Forward},
		{"SET-NX-lock", plainConfig, []string{"SET", "resource:lock", "abc", "NX", "PX", "30000"}, rewrite.Run},
		{"DEL-lock", plainConfig, []string{"DEL", "resource:lock"}, rewrite.Run},
		{"GET-nonlock-fencing-rules", testConfig, []string{"GET", "user:42:name"}, rewrite.Forward},
		{"SET-guarded-fenced", testConfig, []string{"SET", "{r}:data", "v"}, rewrite.Run},
		// A library's obtain script, learned, run in its wrapper.
		{"EVALSHA-acquire-wrapped", plainConfig, []string{"EVALSHA", scriptcheck.SHA1(acquireScript), "1", "resource:lock", "abc", "30000"}, rewrite.Run},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := testDecider(b, c.config, policy.FlushAllow)
			d.Scripts = scriptcheck.NewCache(0)
			d.Scripts.Learn([]byte(acquireScript))
			args := bs(c.args...)
			scratch := make([]keyspec.Key, 0, 8)
			if p := d.Decide(args, alice, scratch); p.Kind != c.kind {
				b.Fatalf("Decide(%q) kind %d, want %d", c.args, p.Kind, c.kind)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Decide(args, alice, scratch)
			}
		})
	}
}

// TestDecideLockAllocs holds the lock path to its allocation budget: an
// acquisition and a release each run for every lock cycle, and what they
// allocate is most of what the proxy spends on one beyond forwarding. The
// budget is what the Plan must own, measured: for SET NX the KEYS slice,
// the counter and records keys, the ARGV slice, the owner's bytes, the
// effect's copy of key and value (one allocation) and the effects slice;
// for DEL the same less the value. The session used here allocates
// nothing of its own. Lower-case names, as go-redis sends them, must cost
// no more than upper-case ones.
func TestDecideLockAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	alice := &ownerSession{"conn:alice"}
	d := testDecider(t, plainConfig, "")
	for _, c := range []struct {
		args   []string
		budget float64
	}{
		{[]string{"SET", "resource:lock", "abc", "NX", "PX", "30000"}, 7},
		{[]string{"set", "resource:lock", "abc", "px", "30000", "nx"}, 7},
		{[]string{"SET", "resource:lock", "abc", "NX", "GET", "PX", "30000"}, 7},
		// SETNX copies key and value apart (one allocation more).
		{[]string{"SETNX", "resource:lock", "abc"}, 8},
		{[]string{"DEL", "resource:lock"}, 7},
		{[]string{"del", "resource:lock"}, 7},
		{[]string{"unlink", "resource:lock"}, 7},
	} {
		args := bs(c.args...)
		scratch := make([]keyspec.Key, 0, 8)
		var p rewrite.Plan
		n := testing.AllocsPerRun(1000, func() { p = d.Decide(args, alice, scratch) })
		if p.Kind != rewrite.Run {
			t.Fatalf("Decide(%q) kind %d, want Run", c.args, p.Kind)
		}
		if n > c.budget {
			t.Errorf("Decide(%q) allocates %v times per call, budget %v", c.args, n, c.budget)
		}
	}
}
