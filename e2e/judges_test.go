package e2e_test

import (
	"strings"
	"testing"
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
