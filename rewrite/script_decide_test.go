package rewrite_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// scriptConfig has one rule per script setting.
const scriptConfig = `
locks:
  - pattern: "*:lock"     # 1: defaults (scripts by class, unknown_sha: allow)
  - pattern: "obs:*"      # 2: release: observe, so blind scripts are observed
    release: observe
  - pattern: "srej:*"     # 3
    scripts: reject
    unknown_sha: reject
  - pattern: "sobs:*"     # 4
    scripts: observe
    unknown_sha: observe
`

const (
	guardedRelease = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0"
	blindRelease   = "-- no check\nreturn redis.call('DEL', KEYS[1])"
	acquireScript  = "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"
	dynamicScript  = "return redis.call(ARGV[1], KEYS[1])"
	argvDelete     = "return redis.call('DEL', ARGV[1])"
)

func scriptDecider(tb testing.TB) *rewrite.Decider {
	d := testDecider(tb, scriptConfig, "")
	d.Scripts = scriptcheck.NewCache(0)
	return d
}

type scriptCase struct {
	name    string
	args    []string
	kind    rewrite.Kind
	code    string   // refusal's code word
	errHas  []string // substrings of the refusal
	effects []string // "Kind key" of each effect
}

// Issue 26: while lock rules exist every EVAL and EVALSHA of a script
// that can reach Valkey runs under the monitor (Run: the checks happen in
// Valkey, call by call); scripts that cannot (no redis, server, _G,
// getfenv, load in their text) and flags=no-writes ones are forwarded;
// bodies that do not compile run monitored too (no text check decides
// whether a body could close a block of the monitor's); an unseen
// EVALSHA is NOSCRIPT, so that clients send the body.
func TestDecideScripts(t *testing.T) {
	alice, _, _ := sessions()
	unseen := strings.Repeat("ab", 20)
	for _, c := range []scriptCase{
		{name: "guarded release runs monitored", args: []string{"EVAL", guardedRelease, "1", "resource:lock", "abc"}, kind: rewrite.Run},
		{name: "acquire runs monitored", args: []string{"eval", acquireScript, "1", "new:lock", "t", "100"}, kind: rewrite.Run},
		{name: "blind release runs monitored", args: []string{"EVAL", blindRelease, "1", "resource:lock"}, kind: rewrite.Run},
		{name: "non-lock keys run monitored", args: []string{"EVAL", blindRelease, "1", "queue:1"}, kind: rewrite.Run},
		{name: "dynamic command runs monitored", args: []string{"EVAL", dynamicScript, "1", "srej:a", "DEL"}, kind: rewrite.Run},
		{name: "key named in ARGV runs monitored", args: []string{"EVAL", argvDelete, "0", "resource:lock"}, kind: rewrite.Run},
		{name: "no call to Valkey: forwarded", args: []string{"EVAL", "return ARGV[1] .. 'x'", "1", "resource:lock", "a"}},
		{name: "no-writes: forwarded", args: []string{"EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1", "resource:lock"}},
		{name: "blocks do not balance: monitored", args: []string{"EVAL", "return 1 end redis.call('DEL', 'resource:lock') local f = function()", "0"}, kind: rewrite.Run},
		{name: "EVAL_RO only learns", args: []string{"EVAL_RO", blindRelease, "1", "resource:lock"}},
		{name: "bad numkeys: Valkey answers", args: []string{"EVAL", blindRelease, "x", "resource:lock"}},
		{name: "numkeys too large: Valkey answers", args: []string{"EVAL", blindRelease, "3", "resource:lock"}},
		{name: "unseen EVALSHA", args: []string{"EVALSHA", unseen, "1", "resource:lock"}, kind: rewrite.Refuse,
			code: "NOSCRIPT", errHas: []string{unseen, "EVAL or SCRIPT LOAD"}},
		{name: "unseen EVALSHA, no lock key", args: []string{"EVALSHA", unseen, "1", "plain"}, kind: rewrite.Refuse, code: "NOSCRIPT"},
		{name: "FCALL runs the function's monitored registration", args: []string{"FCALL", "nosuch", "1", "srej:x"}, kind: rewrite.Run},
		{name: "FCALL of a monitored registration's name", args: []string{"FCALL", "rel__lockproxy", "1", "srej:x"}, kind: rewrite.Refuse,
			code: "ERR", errHas: []string{`"rel__lockproxy"`, "by its own name"}},
		{name: "FCALL_RO passes", args: []string{"FCALL_RO", "get", "1", "srej:x"}},
		{name: "EVALSHA_RO passes", args: []string{"EVALSHA_RO", unseen, "1", "srej:x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := scriptDecider(t)
			checkScriptPlan(t, d.Decide(bs(c.args...), alice, nil), c)
		})
	}
}

func checkScriptPlan(t *testing.T, p rewrite.Plan, c scriptCase) {
	t.Helper()
	if p.Kind != c.kind {
		t.Fatalf("kind %d, want %d (err %q, effects %+v)", p.Kind, c.kind, p.Err, p.Effects)
	}
	if c.code != "" {
		if !strings.HasPrefix(p.Err, c.code+" lockproxy ") {
			t.Fatalf("error %q, want code %s", p.Err, c.code)
		}
		for _, s := range c.errHas {
			if !strings.Contains(p.Err, s) {
				t.Errorf("error %q lacks %q", p.Err, s)
			}
		}
		if c.code != "NOSCRIPT" && (len(p.Effects) != 1 || p.Effects[0].Reason != p.Err) {
			t.Errorf("refusal effects %+v", p.Effects)
		}
	}
	if c.effects != nil || c.kind == rewrite.Forward {
		var got []string
		for _, e := range p.Effects {
			got = append(got, effectKindName(e.Kind)+" "+string(e.Key))
		}
		if strings.Join(got, ",") != strings.Join(c.effects, ",") {
			t.Fatalf("effects %v, want %v", got, c.effects)
		}
	}
}

func effectKindName(k rewrite.EffectKind) string {
	switch k {
	case rewrite.Observed:
		return "Observed"
	case rewrite.Refused:
		return "Refused"
	}
	return "kind?"
}

// Bodies are learned from SCRIPT LOAD and EVAL; EVALSHA of them then runs
// monitored.
func TestDecideScriptsLearned(t *testing.T) {
	alice, _, _ := sessions()
	d := scriptDecider(t)
	decide := func(args ...string) rewrite.Plan { return d.Decide(bs(args...), alice, nil) }
	blindSHA, guardedSHA := scriptcheck.SHA1(blindRelease), scriptcheck.SHA1(guardedRelease)

	// Unseen, then learned from SCRIPT LOAD.
	checkScriptPlan(t, decide("EVALSHA", blindSHA, "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "NOSCRIPT"})
	checkScriptPlan(t, decide("SCRIPT", "LOAD", blindRelease), scriptCase{})
	checkScriptPlan(t, decide("EVALSHA", blindSHA, "1", "srej:x"), scriptCase{kind: rewrite.Run})
	checkScriptPlan(t, decide("evalsha", strings.ToUpper(blindSHA), "1", "resource:lock"), scriptCase{kind: rewrite.Run})
	// Learned from EVAL (the NOSCRIPT fallback of client libraries).
	checkScriptPlan(t, decide("EVAL", guardedRelease, "1", "queue:1", "t"), scriptCase{kind: rewrite.Run})
	checkScriptPlan(t, decide("EVALSHA", guardedSHA, "1", "srej:x", "t"), scriptCase{kind: rewrite.Run})
	// Learned from EVAL_RO too (it then runs monitored as EVALSHA).
	ro := "return redis.call('GET', KEYS[1])"
	decide("EVAL_RO", ro, "1", "x")
	checkScriptPlan(t, decide("EVALSHA", scriptcheck.SHA1(ro), "1", "srej:x"), scriptCase{kind: rewrite.Run})

	// Without a cache: EVAL is still monitored, EVALSHA is unseen.
	d.Scripts = nil
	checkScriptPlan(t, decide("EVAL", blindRelease, "1", "resource:lock"), scriptCase{kind: rewrite.Run})
	checkScriptPlan(t, decide("SCRIPT", "LOAD", blindRelease), scriptCase{})
	checkScriptPlan(t, decide("EVALSHA", blindSHA, "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "NOSCRIPT"})
}

// TestDecideScriptNoAlloc: a script forwarded as it came costs no garbage
// (a monitored one's plan is built per call).
func TestDecideScriptNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	alice, _, _ := sessions()
	d := scriptDecider(t)
	d.Decide(bs("SCRIPT", "LOAD", guardedRelease), alice, nil)
	d.Decide(bs("SCRIPT", "LOAD", blindRelease), alice, nil)
	sha := scriptcheck.SHA1(guardedRelease)
	d.Decide(bs("SCRIPT", "LOAD", "return ARGV[1]"), alice, nil)
	_ = sha
	for _, args := range [][]string{
		{"EVALSHA", scriptcheck.SHA1("return ARGV[1]"), "1", "queue:1", "t"},
		{"EVAL", "return KEYS[1]", "1", "resource:lock"},
		{"EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "resource:lock"},
	} {
		a := bs(args...)
		scratch := make([]keyspec.Key, 0, 8)
		if n := testing.AllocsPerRun(1000, func() { d.Decide(a, alice, scratch) }); n != 0 {
			t.Errorf("Decide(%.20q...) allocates %v times per call", args, n)
		}
	}
}

// BenchmarkDecideScript: the decision for EVALSHA of a cached script is a
// map lookup (plus, with a lock key, the per-key verdict). Compare with
// the first sight of a script, which pays the analysis.
func BenchmarkDecideScript(b *testing.B) {
	alice := &fakeSession{conn: "conn:alice"}
	sha := scriptcheck.SHA1(guardedRelease)
	// A script that calls Valkey runs under the monitor, lock key or not
	// (issue 26); one that cannot reach Valkey is forwarded.
	for _, c := range []struct {
		name string
		args []string
		kind rewrite.Kind
	}{
		{"EVALSHA-cached-lock-key", []string{"EVALSHA", sha, "1", "resource:lock", "abc"}, rewrite.Run},
		{"EVALSHA-cached-no-lock-key", []string{"EVALSHA", sha, "1", "queue:1", "abc"}, rewrite.Run},
		{"EVAL-no-call-to-Valkey", []string{"EVAL", "return KEYS[1]", "1", "resource:lock"}, rewrite.Forward},
		{"EVAL-cached-lock-key", []string{"EVAL", guardedRelease, "1", "resource:lock", "abc"}, rewrite.Run},
		{"GET-lock-key-for-comparison", []string{"GET", "resource:lock"}, rewrite.Forward},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := scriptDecider(b)
			d.Decide(bs("SCRIPT", "LOAD", guardedRelease), alice, nil)
			args := bs(c.args...)
			scratch := make([]keyspec.Key, 0, 8)
			if p := d.Decide(args, alice, scratch); p.Kind != c.kind || len(p.Effects) != 0 {
				b.Fatalf("kind %d, want %d; effects %+v", p.Kind, c.kind, p.Effects)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.Decide(args, alice, scratch)
			}
		})
	}
	b.Run("first-sight-analysis", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			scriptcheck.Analyze(guardedRelease)
		}
	})
}

// Concurrent deciders share one cache (the proxy's sessions do).
func TestDecideScriptsConcurrent(t *testing.T) {
	alice, _, _ := sessions()
	d := scriptDecider(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				body := guardedRelease
				if (g+i)%2 == 0 {
					body = blindRelease
				}
				p := d.Decide(bs("EVAL", body, "1", "resource:lock", "abc"), alice, nil)
				if p.Kind != rewrite.Run {
					t.Errorf("%+v", p)
					return
				}
				d.Decide(bs("EVALSHA", scriptcheck.SHA1(body), "1", "resource:lock", "abc"), alice, nil)
			}
		}(g)
	}
	wg.Wait()
}

// A monitored script's text is made for its shape: lockproxy passes,
// after the client's ARGV, keep_lapsed and per lock among KEYS and ARGV its
// key, counter, records, the client's owner, the rule's mode and the
// locks' index; KEYS stay
// the client's. How many are lockproxy's is written into the text: the
// same shape, the same text; another number of locks, another.
func TestWrapperArguments(t *testing.T) {
	alice, _, _ := sessions()
	d := scriptDecider(t)
	one := d.Decide(bs("EVAL", acquireScript, "1", "new:lock", "t", "100"), alice, nil)
	if one.Kind != rewrite.Run || one.Script == nil {
		t.Fatalf("plan %+v, want the script run monitored", one)
	}
	lock := []byte("new:lock")
	if got := strs(one.Keys); strings.Join(got, " ") != "new:lock" {
		t.Errorf("keys %q, want the client's", got)
	}
	want := []string{"t", "100", "600000", "-1", "", "new:lock", string(rewrite.CounterKey(lock)), string(rewrite.RecordsKey(lock)), alice.conn, "rewrite", rewrite.StandaloneIndexKey}
	if got := strs(one.Args); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("args %q, want %q", got, want)
	}
	const both = "redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2])\n" + acquireScript
	two := d.Decide(bs("EVAL", both, "2", "new:lock", "other:lock", "t", "100"), alice, nil)
	if two.Script == nil || two.Script == one.Script || len(two.Keys) != 2 || len(two.Args) != 5+2*6 {
		t.Errorf("two locks: the one lock's text %v, %d keys, %d args; want another text, 2 keys, 17 args", two.Script == one.Script, len(two.Keys), len(two.Args))
	}
	if again := d.Decide(bs("EVAL", acquireScript, "1", "some:lock", "u", "200"), alice, nil); again.Script != one.Script {
		t.Errorf("the same shape made another text")
	}
}
