package rewrite_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/rewrite"
)

const fnLibrary = "#!lua name=locks\nredis.register_function('rel', function(keys, args)\n  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end\n  return 0\nend)\n"

// FUNCTION LOAD through lockproxy goes with the monitor inside the
// library: the client's lines keep their numbers, the client's code can
// be read back, and a monitored text loaded again gets one monitor.
func TestLibraryMonitored(t *testing.T) {
	d := scriptDecider(t)
	for _, args := range [][]string{
		{"FUNCTION", "LOAD", fnLibrary},
		{"function", "load", "replace", fnLibrary},
	} {
		out, _ := d.Library(bs(args...))
		if len(out) != len(args) {
			t.Fatalf("%v: %d arguments", args[:len(args)-1], len(out))
		}
		text := string(out[len(out)-1])
		if !strings.HasPrefix(text, "#!lua name=locks\nlocal redis, server, _G, getfenv, setfenv, loadstring, load, newproxy, ARGV, setmetatable = (function() local __lockproxy_lib = true ") {
			t.Fatalf("text starts %q", text[:160])
		}
		// The monitor's statement ends on line 2, before the library's
		// line 2; the other lines are the library's.
		lines := strings.Split(text, "\n")
		if !strings.HasSuffix(lines[1], " end)(); redis.register_function('rel', function(keys, args)") {
			t.Errorf("line 2 ends %q", lines[1][len(lines[1])-80:])
		}
		if got := lines[2]; got != "  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end" {
			t.Errorf("line 3 is %q", got)
		}
		orig, ok := rewrite.UnwrapLibrary(text)
		if !ok || orig != fnLibrary {
			t.Fatalf("unwrapped %q, %v", orig, ok)
		}
		again, _ := d.Library(bs("FUNCTION", "LOAD", text))
		if string(again[2]) != text {
			t.Error("a monitored library loaded again is not the same text")
		}
	}
	for _, args := range [][]string{
		{"FUNCTION", "LOAD", "redis.register_function('x', function() end)"}, // no #! line
		{"FUNCTION", "LOAD", "#!lua name=x"},                                 // no code: Valkey's error
		{"FUNCTION", "LOAD", "BADOPTION", fnLibrary},
		{"FUNCTION", "LIST"},
		{"FUNCTION", "DELETE", "locks"},
		{"SCRIPT", "LOAD", fnLibrary},
	} {
		if out, _ := d.Library(bs(args...)); out != nil {
			t.Errorf("%q: rewritten", args)
		}
	}
	// Code that would close a block of the monitor's goes after the
	// monitor's statement, whole, where it cannot (Valkey answers its
	// compile error).
	for _, code := range []string{
		"#!lua name=x\nend redis.call('DEL', 'v:lock') local function f()",
		"#!lua name=x\nend)() redis.call('DEL', 'v:lock') (function()",
		"#!lua name=x\n]] end --[[",
	} {
		out, _ := d.Library(bs("FUNCTION", "LOAD", code))
		if out == nil {
			t.Fatalf("%q: not monitored", code)
		}
		text := string(out[2])
		line, rest, _ := strings.Cut(code, "\n")
		if !strings.HasPrefix(text, line+"\nlocal redis, ") || !strings.HasSuffix(text, " end)(); "+rest) {
			t.Errorf("%q: monitored as %q", code, text)
		}
	}
	if out, _ := testDecider(t, "locks: []\n", "").Library(bs("FUNCTION", "LOAD", fnLibrary)); out != nil {
		t.Error("rewritten without lock rules")
	}
	if _, ok := rewrite.UnwrapLibrary(fnLibrary); ok {
		t.Error("a client's library unwrapped")
	}
}

// FCALL runs name__lockproxy with a monitored EVAL's extra arguments, the
// rules' patterns and the trailer that counts them.
func TestFcallPlan(t *testing.T) {
	alice, _, _ := sessions()
	d := scriptDecider(t)
	p := d.Decide(bs("FCALL", "rel", "1", "srej:x", "tok"), alice, nil)
	if p.Kind != rewrite.Run || p.Script == nil || p.Script.Fn != "rel" || p.Script.Body != "rel__lockproxy" {
		t.Fatalf("plan %+v", p)
	}
	if len(p.Keys) != 1 || string(p.Keys[0]) != "srej:x" || string(p.Args[0]) != "tok" {
		t.Fatalf("keys %q args %q", p.Keys, p.Args)
	}
	// tok, keep_lapsed and the epoch clues, one lock (6), 4 lock patterns,
	// the trailer.
	if n := len(p.Args); n != 1+3+6+4+1 {
		t.Fatalf("%d arguments: %q", n, p.Args)
	}
	if got := string(p.Args[len(p.Args)-1]); got != "lockproxy-fcall 1 0 0 4 0 0 0" {
		t.Errorf("trailer %q", got)
	}
	if got := p.Script.Unwrap([]byte("-ERR Function not found\r\n")); !strings.HasPrefix(string(got), "-ERR Function not found, or its library was loaded around lockproxy") {
		t.Errorf("not found: %q", got)
	}
	if got := p.Script.Unwrap([]byte("-ERR x script: rel__lockproxy, on @user_function:3.\r\n")); string(got) != "-ERR x script: rel, on @user_function:3.\r\n" {
		t.Errorf("error: %q", got)
	}
}

// The replies lockproxy gives back as the client's: FUNCTION STATS's
// running function, FUNCTION LOAD's name collision.
func TestFunctionReplies(t *testing.T) {
	stats := "*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$15\r\nspin__lockproxy\r\n$7\r\ncommand\r\n*9\r\n$5\r\nfcall\r\n$15\r\nspin__lockproxy\r\n$1\r\n1\r\n$6\r\nv:lock\r\n$1\r\nx\r\n$1\r\n0\r\n$1\r\n0\r\n$2\r\nab\r\n$29\r\nlockproxy-fcall 0 0 0 0 0 0 1\r\n$11\r\nduration_ms\r\n:7\r\n$7\r\nengines\r\n*0\r\n"
	want := "*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*5\r\n$5\r\nfcall\r\n$4\r\nspin\r\n$1\r\n1\r\n$6\r\nv:lock\r\n$1\r\nx\r\n$11\r\nduration_ms\r\n:7\r\n$7\r\nengines\r\n*0\r\n"
	if got := string(rewrite.FunctionStats([]byte(stats))); got != want {
		t.Errorf("FUNCTION STATS: %q", got)
	}
	for _, r := range []string{"*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*0\r\n", "-ERR x\r\n"} {
		if got := string(rewrite.FunctionStats([]byte(r))); got != r {
			t.Errorf("%q changed: %q", r, got)
		}
	}
	if got := string(rewrite.FunctionLoadReply([]byte("-ERR Function f1__lockproxy already exists\r\n"))); got != "-ERR Function f1 already exists\r\n" {
		t.Errorf("FUNCTION LOAD: %q", got)
	}
	// A function's own name that merely ends so in a library without
	// the monitor is listed.
	list := "*1\r\n*6\r\n$12\r\nlibrary_name\r\n$1\r\nl\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n*6\r\n$4\r\nname\r\n$12\r\nx__lockproxy\r\n$11\r\ndescription\r\n$-1\r\n$5\r\nflags\r\n*0\r\n"
	if got := string(rewrite.FunctionList([]byte(list))); got != list {
		t.Errorf("FUNCTION LIST: %q", got)
	}
}
