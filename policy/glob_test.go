package policy

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// globPatterns are the patterns checked against a real server: every
// construct of util.c's matcher and its corner cases.
var globPatterns = []string{
	"", "*", "**", "***", "?", "??", "*?", "?*", "*?*",
	"*:lock", "lock:*", "lock:*:x", "*lock*", "**lock**", "*:lock*", "lock",
	"{user:1}:lock", "{user:*}:lock", "*{user:1}*", "{*}",
	"[abc]", "[abc]*", "[^a]", "[^a]*", "[a-c]", "[c-a]", "[a-c]lock", "[^a-c]",
	"[", "[^", "[a", "a[", "[]", "[]a]", "[^]", "[^]*", "[]]", "[a-]", "[a-]b]",
	"[\\]]", "[\\", "[a\\-z]", "[-a]", "[a-z-]", "[!a]", "[*]", "[?]", "x[*]y",
	"\\", "a\\", "\\*", "\\?", "\\[", "\\\\", "\\a", "*\\*", "\\**", "lock\\:*",
	"a*b", "a*b*c", "*a*b*", "a**b", "*a", "a*", "*b", "b*",
	"\x00", "*\x00*", "\xff*", "*\xff", "[\x80-\xff]", "[a-\xff]", "[\xff-a]", "[\x00-\x7f]",
	"*\x80", "?\xff", "[^\xff]",
}

// globKeys are the keys each pattern is tried on.
var globKeys = []string{
	"", "a", "b", "c", "x", "lock", "a:lock", ":lock", "lock:", "lock:1", "lock:1:x",
	"lock:x", "xlockx", "locks", "alock", "a:lock:b", "{user:1}:lock", "{user:2}:lock",
	"{user:1}", "{}", "]", "[", "-", "^", "!", "*", "?", "\\", "ab", "abc", "acb", "aXb",
	"a\\", "*a", "x*y", "x?y", "\x00", "a\x00b", "\xff", "\x80", "\xffab", "ab\xff",
	"\x80\xff", "a\xff", "lock\xff", "0", "~", "`", "aa", "ba", "bb", "a-", "z",
	"lock\x00", "cab", "abbc", "ac", "axbyc",
}

func TestMatchKnownAnswers(t *testing.T) {
	// Hand-derived from util.c; TestMatchAgainstValkey checks the same
	// constructs against the server itself.
	cases := []struct {
		pattern, key string
		want         bool
	}{
		{"*:lock", "order:1:lock", true},
		{"*:lock", ":lock", true},
		{"*:lock", "lock", false},
		{"*:lock", "a:lock:b", false},
		{"lock:*", "lock:", true},
		{"lock:*", "lock", false},
		{"*", "", true},   // KEYS/SCAN's "*" shortcut lists the empty key
		{"**", "", false}, // ...but stringmatchlen never matches "" with a non-empty pattern
		{"?", "", false},
		{"", "", true},
		{"", "a", false},
		{"[a-c]", "b", true},
		{"[c-a]", "b", true}, // reversed ranges are swapped
		{"[^a]", "a", false},
		{"[^a]", "b", true},
		{"[^]", "x", true}, // empty negated class matches any byte
		{"[]", "]", false}, // empty class matches nothing
		{"[]a]", "]a]", false},
		{"[a-]b]", "]", true}, // the ']' ends the range a..']', the class goes on
		{"[a-]b]", "b", true},
		{"[a-]b]", "b]", false},
		{"[abc", "b", true}, // unterminated: the rest of the pattern is the class
		{"[abc", "bc", false},
		{"[", "[", false}, // a bare '[' is an empty unterminated class
		{"[^", "q", true},
		{"\\*", "*", true},
		{"\\*", "a", false},
		{"a\\", "a\\", true}, // a trailing backslash is literal
		{"[\\]]", "]", true},
		{"[a-\xff]", "0", true}, // signed chars: 0xff (-1) .. 'a'
		{"[a-\xff]", "b", false},
		{"[a-\xff]", "\x80", false},
		{"[a-\xff]", "\xff", true},
		{"{user:1}:lock", "{user:1}:lock", true},
		{"{user:1}:lock", "{user:2}:lock", false},
		{"*a*", "a", true},
		{"*a*", "", false},
		{"a*b*c", "axbyc", true},
		{"a*b*c", "axbyd", false},
		{"lock", "Lock", false}, // case-sensitive
	}
	for _, c := range cases {
		if got := CompileAny(c.pattern).Match([]byte(c.key)); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.key, got, c.want)
		}
		if got := matchValkey(c.pattern, []byte(c.key)); got != c.want {
			t.Errorf("reference matcher(%q, %q) = %v, want %v", c.pattern, c.key, got, c.want)
		}
	}
}

// serverKeys stores keys on a fresh server and returns a function listing
// what KEYS pattern returns, as a set.
func serverKeys(t *testing.T, keys []string) func(patterns []string) []map[string]bool {
	t.Helper()
	srv := valkeytest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	pipe := rdb.Pipeline()
	for _, k := range keys {
		pipe.Set(ctx, k, "1", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n := rdb.DBSize(ctx).Val(); n != int64(len(keys)) {
		t.Fatalf("DBSIZE = %d, want %d", n, len(keys))
	}
	return func(patterns []string) []map[string]bool {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.StringSliceCmd, len(patterns))
		for i, p := range patterns {
			cmds[i] = pipe.Keys(ctx, p)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("KEYS: %v", err)
		}
		out := make([]map[string]bool, len(patterns))
		for i, c := range cmds {
			out[i] = map[string]bool{}
			for _, k := range c.Val() {
				out[i][k] = true
			}
		}
		return out
	}
}

func compareWithServer(t *testing.T, patterns, keys []string, listed []map[string]bool) {
	t.Helper()
	bad := 0
	for i, p := range patterns {
		pat := CompileAny(p)
		for _, k := range keys {
			want := listed[i][k]
			if got := pat.Match([]byte(k)); got != want {
				bad++
				if bad <= 20 {
					t.Errorf("pattern %q key %q: Match = %v, KEYS says %v", p, k, got, want)
				}
			}
			// The general matcher alone must agree too, so that the fast
			// paths are not hiding a bug in it.
			if got := matchValkey(p, []byte(k)); got != want {
				bad++
				if bad <= 20 {
					t.Errorf("pattern %q key %q: general matcher = %v, KEYS says %v", p, k, got, want)
				}
			}
		}
	}
}

// TestMatchAgainstValkey compares Match with what a real server's KEYS
// returns, on a table of tricky patterns and on random ones.
func TestMatchAgainstValkey(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Random keys and patterns over the bytes that mean something to the
	// matcher, plus bytes that sort differently as signed chars.
	keyBytes := []byte("ab:-]^[\\*?{}\x00\x80\xff")
	patBytes := []byte("ab:-]^[\\*?{}\x00\x80\xff*")
	randStr := func(alpha []byte, maxLen int) string {
		b := make([]byte, rng.IntN(maxLen+1))
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	keys := append([]string(nil), globKeys...)
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	for len(keys) < len(globKeys)+250 {
		if k := randStr(keyBytes, 6); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	patterns := append([]string(nil), globPatterns...)
	for range 400 {
		patterns = append(patterns, randStr(patBytes, 7))
	}
	listed := serverKeys(t, keys)(patterns)
	// Guard against a vacuous comparison (a server that lists nothing).
	if !listed[0][""] || len(listed[1]) != len(keys) {
		t.Fatalf(`server listed %d keys for "*" (want all %d) / empty pattern lists the empty key: %v`, len(listed[1]), len(keys), listed[0][""])
	}
	compareWithServer(t, patterns, keys, listed)
}

// TestMatchNestingLimitAgainstValkey checks the one quirk that needs a long
// pattern: past 1000 '*' groups Valkey gives up and reports no match.
func TestMatchNestingLimitAgainstValkey(t *testing.T) {
	key := strings.Repeat("a", 1001) + "b"
	patterns := []string{
		strings.Repeat("a*", 1000) + "b", // 1000 groups: matches
		strings.Repeat("a*", 1001) + "b", // 1001 groups: Valkey gives up
		strings.Repeat("a*", 1001),       // the last '*' is trailing and needs no recursion
	}
	listed := serverKeys(t, []string{key})(patterns)
	want := []bool{true, false, true}
	for i, p := range patterns {
		if listed[i][key] != want[i] {
			t.Fatalf("server: pattern %d: listed %v, test expects %v (server changed?)", i, listed[i][key], want[i])
		}
		if got := CompileAny(p).Match([]byte(key)); got != want[i] {
			t.Errorf("pattern with %d groups: Match = %v, want %v", strings.Count(p, "*"), got, want[i])
		}
	}
	if _, err := Compile(patterns[1]); err == nil {
		t.Error("Compile accepted a pattern past Valkey's nesting limit")
	}
}

func TestCompileKinds(t *testing.T) {
	// The common shapes must take a fast path, not the backtracking matcher.
	cases := map[string]patternKind{
		"lock":          kindLiteral,
		"a\\*b":         kindLiteral,
		"{user:1}:lock": kindLiteral,
		"*":             kindAll,
		"**":            kindNonEmpty,
		"lock:*":        kindPrefix,
		"lock:**":       kindPrefix,
		"*:lock":        kindSuffix,
		"\\**":          kindPrefix,
		"*\\*":          kindSuffix,
		"lock:*:x":      kindPrefixSuffix,
		"*lock*":        kindContains,
		"?":             kindGeneral,
		"a*b*c":         kindGeneral,
		"[ab]*":         kindGeneral,
		"*[ab]*":        kindGeneral,
	}
	for p, want := range cases {
		if got := CompileAny(p).kind; got != want {
			t.Errorf("%q: kind %d, want %d", p, got, want)
		}
	}
}

func TestCompileRefusesSurprises(t *testing.T) {
	bad := map[string]string{
		"":              "empty",
		"lock[abc":      "no closing",
		"[":             "no closing",
		"lock:[]":       "empty class",
		"lock\\":        "lone",
		"[a-\xff]:lock": "0x80",
		"[\x80-a]":      "0x80",
	}
	for p, want := range bad {
		_, err := Compile(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want an error about %q", p, err, want)
		}
	}
	for _, p := range []string{"*:lock", "[a-z]:lock", "[\x80-\xff]*", "\\[*", "[\\]a]*", "[^]*", "[a-]b]"} {
		if _, err := Compile(p); err != nil {
			t.Errorf("Compile(%q): %v", p, err)
		}
	}
}

func TestLiteralPartsAndBase(t *testing.T) {
	cases := []struct {
		pattern, prefix, suffix, key, base string
		ok                                 bool
	}{
		{"*:lock", "", ":lock", "order:1:lock", "order:1", true},
		{"lock:*", "lock:", "", "lock:order", "order", true},
		{"lock:{*}:v", "lock:{", "}:v", "lock:{u1}:v", "u1", true},
		{"a\\*b*c\\?", "a*b", "c?", "a*bXYc?", "XY", true},
		{"mylock", "mylock", "", "mylock", "", true},
		{"l?ck:*", "l", "", "lock:1", "ock:1", true},
		{"*:lock", "", ":lock", "lock", "", false},
		{"ab*ba", "ab", "ba", "aba", "", false}, // prefix and suffix would overlap
	}
	for _, c := range cases {
		p := CompileAny(c.pattern)
		pre, suf := p.LiteralParts()
		if pre != c.prefix || suf != c.suffix {
			t.Errorf("%q: LiteralParts = %q, %q; want %q, %q", c.pattern, pre, suf, c.prefix, c.suffix)
		}
		base, ok := p.Base([]byte(c.key))
		if ok != c.ok || string(base) != c.base {
			t.Errorf("%q: Base(%q) = %q, %v; want %q, %v", c.pattern, c.key, base, ok, c.base, c.ok)
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	key := []byte("service:orders:{user:42}:lock")
	for _, p := range []string{"service:orders:{user:42}:lock", "*", "**", "service:*", "*:lock",
		"service:*:lock", "*orders*", "service:?rders:*:lock", "*[lL]ock", "s*o*s*:lock"} {
		pat := CompileAny(p)
		if !pat.Match(key) {
			t.Fatalf("%q does not match %q; the allocation check would measure the wrong path", p, key)
		}
		if n := testing.AllocsPerRun(100, func() { pat.Match(key) }); n != 0 {
			t.Errorf("%q: %v allocations per Match", p, n)
		}
	}
}

// FuzzGlob checks that every compiled fast path answers as the general
// matcher (the util.c port) does, and that what LiteralParts promises holds
// for every match.
func FuzzGlob(f *testing.F) {
	for _, p := range globPatterns {
		f.Add(p, "a:lock")
	}
	for _, k := range globKeys {
		f.Add("*:lock", k)
	}
	f.Fuzz(func(t *testing.T, pattern, key string) {
		if len(pattern) > 256 || len(key) > 256 {
			return // long inputs add time, not coverage
		}
		p := CompileAny(pattern)
		kb := []byte(key)
		got, want := p.Match(kb), matchValkey(pattern, kb)
		if got != want {
			t.Fatalf("pattern %q (kind %d) key %q: Match = %v, general matcher = %v", pattern, p.kind, key, got, want)
		}
		if !got {
			return
		}
		pre, suf := p.LiteralParts()
		if len(key) < p.minLen || !strings.HasPrefix(key, pre) || !strings.HasSuffix(key, suf) {
			t.Fatalf("pattern %q matches %q but LiteralParts %q/%q or minLen %d disagree", pattern, key, pre, suf, p.minLen)
		}
		base, ok := p.Base(kb)
		if !ok || !bytes.Equal(append(append([]byte(pre), base...), suf...), kb) {
			t.Fatalf("pattern %q key %q: Base = %q, %v", pattern, key, base, ok)
		}
	})
}
