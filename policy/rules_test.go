package policy

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func mustRules(t testing.TB, patterns ...string) *Rules {
	t.Helper()
	locks := make([]LockRule, len(patterns))
	for i, p := range patterns {
		locks[i] = LockRule{Pattern: p}
	}
	r, err := NewRules(locks)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRulesFirstMatchWins(t *testing.T) {
	r := mustRules(t, "lock:{admin}:*", "lock:*", "*:lock", "job:?:lock")
	cases := map[string]int{ // key -> rule index, -1 for none
		"lock:{admin}:x": 0,
		"lock:x":         1,
		"lock:x:lock":    1, // matches 1 and 2: the earlier rule decides
		"order:1:lock":   2,
		"job:1:lock":     2,
		"locks":          -1,
		"":               -1,
		"lock":           -1,
		"user:1":         -1,
	}
	for key, want := range cases {
		got := r.Match([]byte(key))
		switch {
		case want < 0 && got != nil:
			t.Errorf("%q matched rule %d (%s), want none", key, got.Index, got.Pattern)
		case want >= 0 && (got == nil || got.Index != want):
			t.Errorf("%q: got %v, want rule %d", key, got, want)
		}
	}
}

func TestRulesDefaultsAndCopy(t *testing.T) {
	fence := &FenceConfig{Counter: "{base}:fence", Guards: []string{"{base}"}}
	locks := []LockRule{{Pattern: "*:lock", Fence: fence}, {Pattern: "m:*", Release: ReleaseObserve, Scripts: ScriptsReject}}
	r, err := NewRules(locks)
	if err != nil {
		t.Fatal(err)
	}
	got := r.All()
	want0 := Rule{Index: 0, Pattern: got[0].Pattern, Release: ReleaseRewrite, Session: SessionConnection,
		UnknownOwner: UnknownOwnerRefuse, UnknownSHA: UnknownSHAAllow,
		Fence:   &FenceConfig{Counter: "{base}:fence", Guards: []string{"{base}"}, Check: FenceCheckCurrent, Mark: FenceMarkLock, UnfencedWrites: UnfencedReject},
		Fencing: got[0].Fencing}
	if got[0].Fencing == nil || got[0].Fencing.Check != FenceCheckCurrent {
		t.Errorf("rule 0's fence was not compiled: %+v", got[0].Fencing)
	}
	if !reflect.DeepEqual(got[0], want0) {
		t.Errorf("rule 0 = %+v\nwant %+v", got[0], want0)
	}
	if got[1].Release != ReleaseObserve || got[1].Scripts != ScriptsReject || got[1].Index != 1 {
		t.Errorf("rule 1 = %+v", got[1])
	}
	// The caller's slices stay the caller's.
	if locks[0].Release != "" || fence.Check != "" {
		t.Error("NewRules wrote defaults into its argument")
	}
	fence.Guards[0] = "changed"
	if got[0].Fence.Guards[0] != "{base}" {
		t.Error("Rules share the caller's fence guards")
	}
	if r.Len() != 2 {
		t.Errorf("Len = %d", r.Len())
	}
}

func TestRulesEmpty(t *testing.T) {
	var nilRules *Rules
	empty := mustRules(t)
	for _, r := range []*Rules{nilRules, empty} {
		if r.Match([]byte("a:lock")) != nil || r.Match(nil) != nil || r.Len() != 0 || len(r.All()) != 0 {
			t.Error("a rule set without rules matched something")
		}
	}
}

func TestNewRulesErrors(t *testing.T) {
	_, err := NewRules([]LockRule{{Pattern: "*:lock"}, {Pattern: ""}, {Pattern: "x[", Release: "drop"}})
	var got []string
	if err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			got = append(got, e.(*RuleError).Error())
		}
	}
	want := []string{
		`locks[1].pattern: is required: the glob of the keys this rule protects, e.g. "*:lock"`,
		`locks[2].pattern: "x[": "[" at offset 1 has no closing "]"; write \[ to match a literal "["`,
		`locks[2].release: "drop" is not one of rewrite, reject, observe`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// In front of a cluster, Check also refuses a rule whose lock records
// cannot share the lock's hash slot; NewRules, which does not know where it
// runs, and Check without a cluster accept it.
func TestCheckCluster(t *testing.T) {
	locks := []LockRule{{Pattern: "{*}:lock"}, {Pattern: "*}:lock"}}
	got := Check(locks, true)
	if len(got) != 1 || got[0].Path != "locks[1].pattern" || !strings.Contains(got[0].Msg, "CROSSSLOT") {
		t.Errorf("Check in a cluster: %v", got)
	}
	if got := Check(locks, false); len(got) != 0 {
		t.Errorf("Check without a cluster: %v", got)
	}
	if _, err := NewRules(locks); err != nil {
		t.Errorf("NewRules: %v", err)
	}
}

// TestRulesFilterKeepsAnswers checks that the first/last-byte pre-filter
// never changes what Match returns, against a plain loop over the patterns.
func TestRulesFilterKeepsAnswers(t *testing.T) {
	sets := map[string][]string{
		"last byte":  {"*:lock", "*:mutex", "job:*:l?ck"},
		"first byte": {"lock:*", "mutex:*", "l?ck:*:x*"},
		"none":       {"*:lock", "lock:*"},
		"catch-all":  {"a:*", "*"},
		"literal":    {"the-lock", "*:lock"},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alpha := []byte("lockmutex:jb*?-x\x00\xff")
	for name, pats := range sets {
		r := mustRules(t, pats...)
		compiled := make([]*Pattern, len(pats))
		for i, p := range pats {
			compiled[i] = MustCompile(p)
		}
		if name == "last byte" && r.filter != filterLast || name == "first byte" && r.filter != filterFirst || name == "none" && r.filter != filterNone {
			t.Errorf("%s: filter kind %d", name, r.filter)
		}
		keys := []string{"", "x:lock", "lock:x", "the-lock", "job:1:lock", "mutex:", ":mutex", "k"}
		for range 3000 {
			b := make([]byte, rng.IntN(12))
			for i := range b {
				b[i] = alpha[rng.IntN(len(alpha))]
			}
			keys = append(keys, string(b))
		}
		matched := 0
		for _, k := range keys {
			want := -1
			for i, p := range compiled {
				if p.Match([]byte(k)) {
					want = i
					break
				}
			}
			got := -1
			if rule := r.Match([]byte(k)); rule != nil {
				got = rule.Index
				matched++
			}
			if got != want {
				t.Errorf("%s: key %q: rule %d, want %d", name, k, got, want)
			}
		}
		if matched == 0 {
			t.Errorf("%s: no key matched; the comparison proved nothing", name)
		}
	}
}

func TestRulesMatchDoesNotAllocate(t *testing.T) {
	r := mustRules(t, benchPatterns(10)...)
	for _, key := range []string{"service:orders:user:42", "service:orders:user:42:lock9", "lock:x:y", ""} {
		k := []byte(key)
		if n := testing.AllocsPerRun(100, func() { r.Match(k) }); n != 0 {
			t.Errorf("%q: %v allocations", key, n)
		}
	}
}

// benchPatterns returns n realistic lock patterns of mixed shapes.
func benchPatterns(n int) []string {
	shapes := []string{"*:lock%d", "lock%d:*", "app:*:lock%d", "*:mutex%d:*", "job:?:lock%d"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(shapes[i%len(shapes)], i)
	}
	return out
}

func BenchmarkMatch(b *testing.B) {
	sameSuffix := make([]string, 10)
	for i := range sameSuffix {
		sameSuffix[i] = fmt.Sprintf("*:lock%d", i)
	}
	sets := []struct {
		name     string
		patterns []string
		match    string // matches the last rule, so every rule is tried first
	}{
		{"rules=0", nil, ""},
		{"rules=1", []string{"*:lock"}, "service:orders:user:42:lock"},
		// Mixed shapes: no common first or last byte, so no pre-filter.
		{"rules=10", benchPatterns(10), "job:1:lock9"},
		// All "*:lockN": the last-byte pre-filter applies.
		{"rules=10-suffix", sameSuffix, "service:orders:user:42:lock9"},
	}
	for _, set := range sets {
		r := mustRules(b, set.patterns...)
		keys := []struct{ kind, key string }{{"nomatch", "service:orders:user:42:profile"}}
		if set.match != "" {
			keys = append(keys, struct{ kind, key string }{"match", set.match})
		}
		for _, k := range keys {
			key := []byte(k.key)
			rule := r.Match(key)
			if (rule != nil) != (k.kind == "match") || rule != nil && rule.Index != len(set.patterns)-1 {
				b.Fatalf("%s key %q: matched %+v; the benchmark would measure the wrong path", set.name, k.key, rule)
			}
			b.Run(set.name+"/"+k.kind, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r.Match(key)
				}
			})
		}
	}
}

func BenchmarkPattern(b *testing.B) {
	key := []byte("service:orders:{user:42}:lock")
	for _, p := range []string{"*:lock", "service:*", "service:*:lock", "*orders*", "service:?rders:*:lock", "s*o*{*}*:lock"} {
		pat := CompileAny(p)
		b.Run(strings.NewReplacer("*", "STAR", "?", "Q").Replace(p), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pat.Match(key)
			}
		})
	}
}
