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
	library        = "#!lua name=locks\nredis.register_function('rel', function(keys, args)\n  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end\n  return 0\nend)\nredis.register_function('force', function(keys, args)\n  return redis.call('DEL', keys[1])\nend)"
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

func TestDecideScripts(t *testing.T) {
	alice, _, _ := sessions()
	blindSHA := scriptcheck.SHA1(blindRelease)
	for _, c := range []scriptCase{
		// Guarded and acquire scripts that change a lock run in their
		// wrapper, which keeps the owner records true (issue 18).
		{name: "guarded release runs wrapped", args: []string{"EVAL", guardedRelease, "1", "resource:lock", "abc"}, kind: rewrite.Run},
		// Run in its wrapper, which mints the grant (issue 18).
		{name: "acquire runs wrapped", args: []string{"eval", acquireScript, "1", "new:lock", "t", "100"}, kind: rewrite.Run},
		{name: "blind release refused", args: []string{"EVAL", blindRelease, "1", "resource:lock"}, kind: rewrite.Refuse,
			code: "BLINDSCRIPT", errHas: []string{"script " + blindSHA, "line 2 (DEL) deletes lock key \"resource:lock\"", "KEYS[1]", `rule 1 "*:lock"`, "redis.call('GET',KEYS[1])==ARGV[1]"},
			effects: []string{"Refused resource:lock"}},
		{name: "blind under release: observe is observed", args: []string{"EVAL", blindRelease, "1", "obs:a"}, effects: []string{"Observed obs:a"}},
		{name: "blind under scripts: observe", args: []string{"EVAL", blindRelease, "1", "sobs:a"}, effects: []string{"Observed sobs:a"}},
		{name: "blind under scripts: reject", args: []string{"EVAL", blindRelease, "1", "srej:a"}, kind: rewrite.Refuse, code: "BLINDSCRIPT"},
		{name: "unknown observed by default", args: []string{"EVAL", dynamicScript, "1", "resource:lock", "DEL"}, effects: []string{"Observed resource:lock"}},
		{name: "unknown refused under scripts: reject", args: []string{"EVAL", dynamicScript, "1", "srej:a", "DEL"}, kind: rewrite.Refuse,
			code: "UNCHECKEDSCRIPT", errHas: []string{"line 1", "srej:a", "command name is not a literal", "scripts: reject"}},
		{name: "non-lock keys pass", args: []string{"EVAL", blindRelease, "1", "queue:1"}},
		{name: "second key is the blind one", args: []string{"EVAL", "if redis.call('GET', KEYS[2]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end", "2", "a:lock", "b:lock", "t"},
			kind: rewrite.Refuse, code: "BLINDSCRIPT", errHas: []string{`"a:lock"`}},
		{name: "key named in ARGV", args: []string{"EVAL", argvDelete, "0", "resource:lock"}, kind: rewrite.Refuse,
			code: "BLINDSCRIPT", errHas: []string{`"resource:lock" (ARGV[1]`}},
		{name: "key named in ARGV, not a lock", args: []string{"EVAL", argvDelete, "0", "plain"}},
		{name: "EVAL_RO only learns", args: []string{"EVAL_RO", blindRelease, "1", "resource:lock"}},
		{name: "bad numkeys: Valkey answers", args: []string{"EVAL", blindRelease, "x", "resource:lock"}},
		{name: "numkeys too large: Valkey answers", args: []string{"EVAL", blindRelease, "3", "resource:lock"}},
		{name: "unseen EVALSHA, allow", args: []string{"EVALSHA", strings.Repeat("ab", 20), "1", "resource:lock"}},
		{name: "unseen EVALSHA, observe", args: []string{"EVALSHA", strings.Repeat("ab", 20), "1", "sobs:x"}, effects: []string{"Observed sobs:x"}},
		{name: "unseen EVALSHA, reject", args: []string{"EVALSHA", strings.Repeat("ab", 20), "1", "srej:x"}, kind: rewrite.Refuse,
			code: "NOSCRIPT", errHas: []string{strings.Repeat("ab", 20), "unknown_sha: reject", "EVAL or SCRIPT LOAD"}},
		{name: "unseen EVALSHA, no lock key", args: []string{"EVALSHA", strings.Repeat("ab", 20), "1", "srej-not"}},
		{name: "unseen FCALL, reject", args: []string{"FCALL", "nosuch", "1", "srej:x"}, kind: rewrite.Refuse,
			code: "UNCHECKEDSCRIPT", errHas: []string{`function "nosuch"`, "FUNCTION LOAD"}},
		{name: "EVALSHA_RO passes", args: []string{"EVALSHA_RO", strings.Repeat("ab", 20), "1", "srej:x"}},
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
		if len(p.Effects) != 1 || p.Effects[0].Reason != p.Err {
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

// Bodies are learned from SCRIPT LOAD, EVAL and FUNCTION LOAD; EVALSHA and
// FCALL then use their verdicts.
func TestDecideScriptsLearned(t *testing.T) {
	alice, _, _ := sessions()
	d := scriptDecider(t)
	decide := func(args ...string) rewrite.Plan { return d.Decide(bs(args...), alice, nil) }
	blindSHA, guardedSHA := scriptcheck.SHA1(blindRelease), scriptcheck.SHA1(guardedRelease)

	// Unseen under unknown_sha: reject, then learned from SCRIPT LOAD.
	checkScriptPlan(t, decide("EVALSHA", blindSHA, "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "NOSCRIPT"})
	checkScriptPlan(t, decide("SCRIPT", "LOAD", blindRelease), scriptCase{})
	checkScriptPlan(t, decide("EVALSHA", blindSHA, "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "BLINDSCRIPT"})
	checkScriptPlan(t, decide("evalsha", strings.ToUpper(blindSHA), "1", "resource:lock"), scriptCase{kind: rewrite.Refuse, code: "BLINDSCRIPT"})
	// Learned from EVAL (the NOSCRIPT fallback of client libraries).
	checkScriptPlan(t, decide("EVAL", guardedRelease, "1", "queue:1", "t"), scriptCase{})
	checkScriptPlan(t, decide("EVALSHA", guardedSHA, "1", "srej:x", "t"), scriptCase{kind: rewrite.Run}) // wrapped
	// Learned from EVAL_RO too.
	ro := "return redis.call('GET', KEYS[1])"
	decide("EVAL_RO", ro, "1", "x")
	checkScriptPlan(t, decide("EVALSHA", scriptcheck.SHA1(ro), "1", "srej:x"), scriptCase{})

	// Functions: per function, FCALL by name, any letter case. A
	// FUNCTION command is learned once Valkey accepted it (Learn).
	learn := func(accepted bool, args ...string) {
		t.Helper()
		p := decide(args...)
		if p.Learn == nil || p.Kind != rewrite.Forward {
			t.Fatalf("%v: plan %+v", args, p)
		}
		p.Learn(accepted)
	}
	learn(true, "FUNCTION", "LOAD", library)
	checkScriptPlan(t, decide("FCALL", "rel", "1", "srej:x", "t"), scriptCase{})
	checkScriptPlan(t, decide("FCALL", "FORCE", "1", "resource:lock"), scriptCase{kind: rewrite.Refuse, code: "BLINDSCRIPT",
		errHas: []string{`function "force" (library "locks")`, "line 7 (DEL)"}})
	// A load Valkey refuses (no REPLACE of a known library) changes
	// nothing; until its reply, the worse of the two verdicts holds.
	guardedForce := strings.Replace(library, "return redis.call('DEL', keys[1])\nend)", "return 0\nend)", 1)
	p := decide("FUNCTION", "LOAD", guardedForce)
	checkScriptPlan(t, decide("FCALL", "force", "1", "resource:lock"), scriptCase{kind: rewrite.Refuse, code: "BLINDSCRIPT"})
	p.Learn(false)
	checkScriptPlan(t, decide("FCALL", "force", "1", "resource:lock"), scriptCase{kind: rewrite.Refuse, code: "BLINDSCRIPT"})
	learn(true, "FUNCTION", "LOAD", "REPLACE", guardedForce)
	checkScriptPlan(t, decide("FCALL", "force", "1", "resource:lock"), scriptCase{})
	learn(false, "FUNCTION", "DELETE", "locks")
	checkScriptPlan(t, decide("FCALL", "rel", "1", "srej:x"), scriptCase{})
	learn(true, "FUNCTION", "DELETE", "locks")
	checkScriptPlan(t, decide("FCALL", "rel", "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "UNCHECKEDSCRIPT"})
	learn(true, "FUNCTION", "LOAD", library)
	learn(true, "FUNCTION", "FLUSH")
	checkScriptPlan(t, decide("FCALL", "rel", "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "UNCHECKEDSCRIPT"})

	// Without a cache: EVAL is still checked, EVALSHA is unseen.
	d.Scripts = nil
	checkScriptPlan(t, decide("EVAL", blindRelease, "1", "resource:lock"), scriptCase{kind: rewrite.Refuse, code: "BLINDSCRIPT"})
	checkScriptPlan(t, decide("SCRIPT", "LOAD", blindRelease), scriptCase{})
	checkScriptPlan(t, decide("EVALSHA", blindSHA, "1", "srej:x"), scriptCase{kind: rewrite.Refuse, code: "NOSCRIPT"})
}

// TestDecideScriptNoAlloc: an EVALSHA of a known script costs no garbage,
// without a lock key or with one it does not change (a guarded or acquire
// script that changes a lock runs wrapped: that plan is built per call).
func TestDecideScriptNoAlloc(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	alice, _, _ := sessions()
	d := scriptDecider(t)
	d.Decide(bs("SCRIPT", "LOAD", guardedRelease), alice, nil)
	d.Decide(bs("SCRIPT", "LOAD", blindRelease), alice, nil)
	sha := scriptcheck.SHA1(guardedRelease)
	for _, args := range [][]string{
		{"EVALSHA", sha, "1", "queue:1", "t"},
		{"EVALSHA", scriptcheck.SHA1(blindRelease), "1", "queue:1"},
		{"EVAL", "return redis.call('GET', KEYS[1])", "1", "resource:lock"},
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
	// On a lock key a guarded release runs in its wrapper (it keeps the
	// owner record, issue 18); elsewhere it is forwarded.
	for _, c := range []struct {
		name string
		args []string
		kind rewrite.Kind
	}{
		{"EVALSHA-cached-lock-key", []string{"EVALSHA", sha, "1", "resource:lock", "abc"}, rewrite.Run},
		{"EVALSHA-cached-no-lock-key", []string{"EVALSHA", sha, "1", "queue:1", "abc"}, rewrite.Forward},
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
				if (p.Kind == rewrite.Refuse) != (body == blindRelease) {
					t.Errorf("%+v", p)
					return
				}
				d.Decide(bs("EVALSHA", scriptcheck.SHA1(body), "1", "resource:lock", "abc"), alice, nil)
			}
		}(g)
	}
	wg.Wait()
}

// A script acquisition's wrapper is made for its shape: lockproxy adds
// only each lock's counter and records keys (after the lock itself) and
// the owner and keep_lapsed; how many are lockproxy's is written into the
// wrapper's text, not sent with every call (issue 18, item 8: each
// argument costs Valkey about what a GET in the script costs). A shape
// with another number of locks is another wrapper; the same shape, the
// same wrapper.
func TestWrapperArguments(t *testing.T) {
	alice, _, _ := sessions()
	d := scriptDecider(t)
	one := d.Decide(bs("EVAL", acquireScript, "1", "new:lock", "t", "100"), alice, nil)
	if one.Kind != rewrite.Run || one.Script == nil {
		t.Fatalf("plan %+v, want the script run in its wrapper", one)
	}
	lock := []byte("new:lock")
	wantKeys := []string{"new:lock", "new:lock", string(rewrite.CounterKey(lock)), string(rewrite.RecordsKey(lock))}
	if got := strs(one.Keys); strings.Join(got, " ") != strings.Join(wantKeys, " ") {
		t.Errorf("keys %q, want %q", got, wantKeys)
	}
	if got := strs(one.Args); len(got) != 4 || got[0] != "t" || got[1] != "100" || got[2] != alice.conn || got[3] != "600000" {
		t.Errorf("args %q, want the client's two, then owner %q and keep_lapsed", got, alice.conn)
	}
	const both = "redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2])\n" + acquireScript
	two := d.Decide(bs("EVAL", both, "2", "new:lock", "other:lock", "t", "100"), alice, nil)
	if two.Script == nil || two.Script == one.Script || len(two.Keys) != 2+2*3 || len(two.Args) != 4 {
		t.Errorf("two locks: the one lock's wrapper %v, %d keys, %d args; want another wrapper, 8 keys, 4 args", two.Script == one.Script, len(two.Keys), len(two.Args))
	}
	if again := d.Decide(bs("EVAL", acquireScript, "1", "some:lock", "u", "200"), alice, nil); again.Script != one.Script {
		t.Errorf("the same shape made another wrapper")
	}
}
