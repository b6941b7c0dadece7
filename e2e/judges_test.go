package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// Issue 38, item 2 (one judge): a call sent plain, as the call of an EVAL
// and as the call of an FCALL gets the same decision from lockproxy. The
// grammar fuzzer compares the three ways of every line it generates
// (docs/fuzz-grammar.md, "One judge"); each disagreement it found and that
// was fixed has a case here.

// GETEX without options only reads (Valkey changes neither the value nor
// the lease): a stranger's plain GETEX of a held lock answers the token,
// and so did it from a script and a function; the monitor refused those
// with NOTOWNER, as if they changed the lease.
func TestJudgesGetexWithoutOptions(t *testing.T) {
	e := newEnv(t, rulesOptions(t, rule("reject")))
	d := e.direct()
	holder, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", "v:lock", "tok", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, stranger.do("FUNCTION", "LOAD", "#!lua name=jg\nredis.register_function('jgcall', function(k, a) return redis.call(unpack(a)) end)"), bulk("jg"))
	want := bulk("tok")
	for _, way := range [][]string{
		{"GETEX", "v:lock"},
		{"EVAL", "return redis.call(unpack(ARGV))", "1", "v:lock", "GETEX", "v:lock"},
		{"FCALL", "jgcall", "1", "v:lock", "GETEX", "v:lock"},
		{"EVAL", "return redis.call(unpack(ARGV))", "1", "v:lock", "getex", "v:lock"},
	} {
		if got := stranger.do(way...); got != want {
			t.Errorf("%s: %q, want %q", way[0], got, want)
		}
	}
	// The lease is as it was: none of them changed it.
	if pttl := d.PTTL(ctx, "v:lock").Val().Milliseconds(); pttl <= 0 || pttl > 600000 {
		t.Errorf("lease after the GETEXs: %d ms", pttl)
	}
	// With an option GETEX changes the lease: refused every way for a
	// stranger.
	for _, way := range [][]string{
		{"GETEX", "v:lock", "PERSIST"},
		{"EVAL", "return redis.call(unpack(ARGV))", "1", "v:lock", "GETEX", "v:lock", "PERSIST"},
		{"FCALL", "jgcall", "1", "v:lock", "GETEX", "v:lock", "PERSIST"},
	} {
		if got := stranger.do(way...); !strings.HasPrefix(got, "-NOTOWNER ") && !strings.HasPrefix(got, "-LOCKED ") {
			t.Errorf("%s ... PERSIST: %q, want a refusal", way[0], got)
		}
	}
	if pttl := d.PTTL(ctx, "v:lock").Val().Milliseconds(); pttl <= 0 {
		t.Errorf("lease after the refused GETEX PERSISTs: %d ms", pttl)
	}
	eq(t, d.Get(ctx, "v:lock").Val(), "tok")
}

// The same on a key a lock guards and on one of lockproxy's own keys: a
// GETEX without options reads it, plain and from a script alike (the plain
// judge fenced it as a write, UNFENCED, and refused it on an own key,
// where the monitor lets it read).
func TestJudgesGetexWithoutOptionsGuarded(t *testing.T) {
	e := newEnv(t, rulesOptions(t, fenceRule("current", "reject")))
	d := e.direct()
	holder, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, holder.do("SET", "{o}:lock", "tok", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, d.Set(ctx, "{o}:data", "d", 0).Err(), nil)
	// Plain and from a script on the guarded key; plain on the own key (a
	// script that names an own key in KEYS is refused before it runs, a
	// documented difference of the judges).
	for _, way := range [][]string{
		{"GETEX", "{o}:data"},
		{"EVAL", "return redis.call(unpack(ARGV))", "1", "{o}:data", "GETEX", "{o}:data"},
		{"GETEX", "{o}:fence"},
	} {
		key := way[len(way)-1]
		if got, want := stranger.do(way...), bulk(d.Get(ctx, key).Val()); got != want {
			t.Errorf("%s of %s: %q, want %q", way[0], key, got, want)
		}
	}
	// With an option it writes: fenced, and refused on an own key.
	if got := stranger.do("GETEX", "{o}:data", "PX", "100000"); !strings.HasPrefix(got, "-UNFENCED ") {
		t.Errorf("GETEX {o}:data PX: %q, want UNFENCED", got)
	}
	if got := stranger.do("GETEX", "{o}:fence", "PERSIST"); !strings.HasPrefix(got, "-LOCKED ") {
		t.Errorf("GETEX {o}:fence PERSIST: %q, want LOCKED", got)
	}
	eq(t, d.PTTL(ctx, "{o}:data").Val(), time.Duration(-1))
}
