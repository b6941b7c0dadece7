package rewrite_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/luaeval"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Every script in rewrite.Scripts is run through table-driven scenarios
// twice: offline on luaeval with a fake clock (a lease lapses by moving the
// clock), and against a real valkey-server over raw TCP, where each step's
// reply bytes must equal luaeval's (run in lockstep on the wall clock) and
// the expected value. So the scripts are tested without a server, and
// luaeval is checked rather than trusted.

// reply is an expected reply, per protocol (2 or 3).
type reply func(proto int) string

func intR(n int64) reply { return func(int) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" } }
func bulkR(s string) reply {
	return func(int) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
}
func errR(s string) reply { return func(int) string { return "-" + s + "\r\n" } }
func okR(int) string      { return "+OK\r\n" }

// nullR is a missing value: GET of a missing key.
func nullR(p int) string {
	if p == 3 {
		return "_\r\n"
	}
	return "$-1\r\n"
}

// falseR is a script's Lua false. The scripts run in RESP2 mode (they
// never call redis.setresp(3)), and then Valkey answers false with the
// client's null, "_" under RESP3, not a boolean "#f": the client sees what
// SET NX, SET XX and GETEX answer when they do nothing.
func falseR(p int) string { return nullR(p) }

// pairsR is a flat field/value reply: an array in RESP2, a map in RESP3.
func pairsR(kv ...string) reply {
	return func(p int) string {
		var b strings.Builder
		if p == 3 {
			fmt.Fprintf(&b, "%%%d\r\n", len(kv)/2)
		} else {
			fmt.Fprintf(&b, "*%d\r\n", len(kv))
		}
		for _, s := range kv {
			b.WriteString(bulkR(s)(p))
		}
		return b.String()
	}
}

type sstep struct {
	args  []string
	lapse time.Duration // before the step: the fake clock moves / the test sleeps
	want  reply         // nil: only luaeval and Valkey must agree
	ttl   [2]int64      // hi > 0: an integer reply (PTTL) in [lo, hi], backends within 100
}

type sscenario struct {
	name   string
	script *rewrite.Script // the script under test (coverage)
	protos []int           // default RESP2 only
	// gap names a command the scenario needs that luaeval does not
	// implement: offline the scenario is skipped when it reaches it, and
	// against Valkey luaeval is compared only up to it.
	gap   string
	steps []sstep
}

func do(want reply, args ...string) sstep { return sstep{args: args, want: want} }
func pttl(key string, lo, hi int64) sstep {
	return sstep{args: []string{"PTTL", key}, ttl: [2]int64{lo, hi}}
}

// lapse makes the next step happen d later.
func lapse(d time.Duration, s sstep) sstep { s.lapse = d; return s }

func evalScript(s *rewrite.Script, keys []string, args ...string) []string {
	out := []string{"EVAL", s.Body, strconv.Itoa(len(keys))}
	out = append(out, keys...)
	return append(out, args...)
}

func ctr(lock string) string { return string(rewrite.CounterKey([]byte(lock))) }

// acq is Acquire as Decide sends it for SET lock value opts...
func acq(lock, value string, opts ...string) []string {
	return acqC(lock, ctr(lock), value, opts...)
}

func acqC(lock, counter, value string, opts ...string) []string {
	return evalScript(rewrite.Acquire, []string{lock, counter}, append([]string{value}, opts...)...)
}

type held struct {
	lock, counter, value string
	grant                int64
}

func h(lock, value string, grant int64) held { return held{lock, ctr(lock), value, grant} }

// rel is Release for DEL/UNLINK of plain keys and held locks.
func rel(cmd string, plain []string, locks ...held) []string {
	keys := append([]string(nil), plain...)
	args := []string{cmd, strconv.Itoa(len(plain))}
	for _, l := range locks {
		keys = append(keys, l.lock, l.counter)
		args = append(args, l.value, strconv.FormatInt(l.grant, 10))
	}
	return evalScript(rewrite.Release, keys, args...)
}

// grd is Guarded: cmd with its arguments after the key, run for the holder
// of l; fail is "0" or "nil".
func grd(l held, fail, cmd string, args ...string) []string {
	return evalScript(rewrite.Guarded, []string{l.lock, l.counter},
		append([]string{l.value, strconv.FormatInt(l.grant, 10), fail, cmd}, args...)...)
}

type check struct {
	counter string
	token   int64
	mode    string // current | highest
	key     string
}

// fen is Fenced: the checks, then the command (its keys follow the
// checks' keys, as Decide declares them).
func fen(checks []check, cmdKeys []string, cmd ...string) []string {
	var keys []string
	args := []string{strconv.Itoa(len(checks))}
	for _, c := range checks {
		keys = append(keys, c.counter, c.counter+":high")
		args = append(args, strconv.FormatInt(c.token, 10), c.mode, c.key)
	}
	keys = append(keys, cmdKeys...)
	return evalScript(rewrite.Fenced, keys, append(args, cmd...)...)
}

func staleHighest(key string, token, high int64) reply {
	return errR(fmt.Sprintf("STALE lockproxy refused a write to %s with fencing token %d: it has already accepted token %d; acquire the lock again before writing", key, token, high))
}

func staleCurrent(key string, token, latest int64) reply {
	return errR(fmt.Sprintf("STALE lockproxy refused a write to %s with fencing token %d: the lock was granted again since, to token %d; acquire the lock again before writing", key, token, latest))
}

// A lapsing lease: short enough to wait out on a real server.
const (
	shortPX = "20"
	wait    = 40 * time.Millisecond
)

// scriptScenarios builds the scenarios; now anchors PXAT/EXAT arguments
// (the offline clock is frozen at now).
func scriptScenarios(tb testing.TB, now time.Time) []sscenario {
	both := []int{2, 3}
	nowMS := now.UnixMilli()
	var out []sscenario

	// Acquire: every SET option order. Success answers the grant number
	// (the counter INCR'd once), contention answers false and leaves the
	// counter alone.
	for _, o := range []struct {
		opts   []string
		lo, hi int64 // PTTL after acquiring; hi 0: no expiry (-1)
	}{
		{[]string{"NX", "PX", "30000"}, 29000, 30000},
		{[]string{"PX", "30000", "NX"}, 29000, 30000},
		{[]string{"nx", "ex", "30"}, 29000, 30000},
		{[]string{"EX", "30", "NX"}, 29000, 30000},
		{[]string{"NX", "PXAT", strconv.FormatInt(nowMS+30000, 10)}, 28000, 30000},
		{[]string{"EXAT", strconv.FormatInt(nowMS/1000+31, 10), "nx"}, 29000, 31000},
		{[]string{"NX", "KEEPTTL"}, 0, 0},
		{[]string{"KEEPTTL", "NX"}, 0, 0},
		{[]string{"NX"}, 0, 0},
	} {
		ttl := do(intR(-1), "PTTL", "res:lock")
		if o.hi > 0 {
			ttl = pttl("res:lock", o.lo, o.hi)
		}
		out = append(out, sscenario{name: "acquire " + optionWords(o.opts), script: rewrite.Acquire, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "abc", o.opts...)...),
			do(bulkR("1"), "GET", ctr("res:lock")),
			do(bulkR("abc"), "GET", "res:lock"),
			ttl,
			do(falseR, acq("res:lock", "xyz", o.opts...)...),
			do(bulkR("1"), "GET", ctr("res:lock")),
			do(bulkR("abc"), "GET", "res:lock"),
			do(intR(-1), "PTTL", ctr("res:lock")), // the counter never expires
		}})
	}
	out = append(out,
		sscenario{name: "acquire after the lease lapsed", script: rewrite.Acquire, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "abc", "NX", "PX", shortPX)...),
			lapse(wait, do(intR(2), acq("res:lock", "xyz", "NX", "PX", "30000")...)),
			do(bulkR("xyz"), "GET", "res:lock"),
			do(bulkR("2"), "GET", ctr("res:lock")),
		}},
		sscenario{name: "acquire after a release, hash-tagged key", script: rewrite.Acquire, protos: both, steps: []sstep{
			do(intR(1), acq("{user:1}:lock", "1", "NX", "PX", "30000")...),
			do(intR(1), rel("DEL", nil, h("{user:1}:lock", "1", 1))...),
			do(intR(2), acq("{user:1}:lock", "1", "NX", "PX", "30000")...),
			do(bulkR("2"), "GET", "{user:1}:lock:lockproxy:grants"),
		}},
		sscenario{name: "acquire mints the seed's tokens 33, 34, 35", script: rewrite.Acquire, protos: both, steps: []sstep{
			do(okR, "SET", "{r}:fence", "32"),
			do(intR(33), acqC("{r}:flock", "{r}:fence", "A", "NX", "PX", "30000")...),
			do(intR(1), "DEL", "{r}:flock"),
			do(intR(34), acqC("{r}:flock", "{r}:fence", "B", "NX", "PX", "30000")...),
			do(falseR, acqC("{r}:flock", "{r}:fence", "C", "NX", "PX", "30000")...),
			do(intR(1), "DEL", "{r}:flock"),
			do(intR(35), acqC("{r}:flock", "{r}:fence", "C", "NX", "PX", "30000")...),
		}},
		sscenario{name: "acquire over a key of another type", script: rewrite.Acquire, protos: both, steps: []sstep{
			do(intR(1), "HSET", "res:lock", "f", "v"),
			do(falseR, acq("res:lock", "abc", "NX", "PX", "30000")...),
			do(nullR, "GET", ctr("res:lock")),
		}},
	)

	// Release: DEL/UNLINK made safe.
	out = append(out,
		sscenario{name: "seed: blind DEL deletes the successor's lock (the hazard)", script: rewrite.Release, steps: []sstep{
			do(okR, "SET", "resource:lock", "abc", "NX", "PX", shortPX),
			lapse(wait, do(okR, "SET", "resource:lock", "xyz", "NX", "PX", "30000")),
			do(intR(1), "DEL", "resource:lock"),
			do(nullR, "GET", "resource:lock"),
		}},
		sscenario{name: "seed: A's lease lapses, B acquires, A's release answers 0", script: rewrite.Release, steps: []sstep{
			do(intR(1), acq("resource:lock", "abc", "NX", "PX", shortPX)...),
			lapse(wait, do(nullR, "GET", "resource:lock")),
			do(intR(2), acq("resource:lock", "xyz", "NX", "PX", "30000")...),
			do(intR(0), rel("DEL", nil, h("resource:lock", "abc", 1))...),
			do(bulkR("xyz"), "GET", "resource:lock"),
			pttl("resource:lock", 29000, 30000),
			do(intR(1), rel("DEL", nil, h("resource:lock", "xyz", 2))...),
			do(intR(0), "EXISTS", "resource:lock"),
		}},
		sscenario{name: "seed: A releases in time", script: rewrite.Release, steps: []sstep{
			do(intR(1), acq("resource:lock", "abc", "NX", "PX", "30000")...),
			do(intR(1), rel("DEL", nil, h("resource:lock", "abc", 1))...),
			do(intR(0), "EXISTS", "resource:lock"),
			do(intR(0), rel("DEL", nil, h("resource:lock", "abc", 1))...),
			do(bulkR("1"), "GET", ctr("resource:lock")),
		}},
		sscenario{name: "release: two holders of the value 1 told apart by grant", script: rewrite.Release, steps: []sstep{
			do(intR(1), acq("resource:lock", "1", "NX", "PX", shortPX)...),
			lapse(wait, do(intR(2), acq("resource:lock", "1", "NX", "PX", "30000")...)),
			do(intR(0), rel("DEL", nil, h("resource:lock", "1", 1))...),
			do(bulkR("1"), "GET", "resource:lock"),
			do(intR(1), rel("UNLINK", nil, h("resource:lock", "1", 2))...),
			do(nullR, "GET", "resource:lock"),
		}},
		sscenario{name: "release: wrong value or wrong grant deletes nothing", script: rewrite.Release, steps: []sstep{
			do(intR(1), acq("resource:lock", "abc", "NX", "PX", "30000")...),
			do(intR(0), rel("DEL", nil, h("resource:lock", "xyz", 1))...),
			do(intR(0), rel("DEL", nil, h("resource:lock", "abc", 2))...),
			do(intR(0), rel("DEL", nil, h("resource:lock", "abc", 0))...),
			do(bulkR("abc"), "GET", "resource:lock"),
		}},
		sscenario{name: "release: multi-key DEL sums like DEL", script: rewrite.Release, steps: []sstep{
			do(okR, "SET", "p1", "a"),
			do(okR, "SET", "p2", "b"),
			do(intR(1), acq("l1:lock", "v1", "NX", "PX", "30000")...),
			do(intR(1), acq("l2:lock", "v2", "NX", "PX", "30000")...),
			do(intR(1), acq("l3:lock", "v3", "NX", "PX", "30000")...),
			// p1, p2 and two of the three locks: 4 (p3 is missing, l3 is not ours).
			do(intR(4), rel("DEL", []string{"p1", "p2", "p3"}, h("l1:lock", "v1", 1), h("l2:lock", "v2", 1), h("l3:lock", "other", 1))...),
			do(intR(1), "EXISTS", "p1", "p2", "p3", "l1:lock", "l2:lock", "l3:lock"),
			do(bulkR("v3"), "GET", "l3:lock"),
		}},
		sscenario{name: "release: multi-key UNLINK", script: rewrite.Release, steps: []sstep{
			do(okR, "SET", "p1", "a"),
			do(intR(1), "ZADD", "p2", "1", "m"),
			do(intR(1), "HSET", "p3", "f", "v"),
			do(intR(1), acq("l1:lock", "v1", "NX", "PX", "30000")...),
			do(intR(4), rel("UNLINK", []string{"p1", "p2", "p3"}, h("l1:lock", "v1", 1))...),
			do(intR(0), "EXISTS", "p1", "p2", "p3", "l1:lock"),
		}},
		sscenario{name: "release: plain keys only, and a lock named twice", script: rewrite.Release, steps: []sstep{
			do(okR, "SET", "p1", "a"),
			do(okR, "SET", "p2", "b"),
			do(intR(2), rel("DEL", []string{"p1", "p2", "p1"})...),
			do(intR(1), acq("resource:lock", "abc", "NX")...),
			// DEL k k answers 1, and so does the script.
			do(intR(1), rel("DEL", nil, h("resource:lock", "abc", 1), h("resource:lock", "abc", 1))...),
		}},
	)

	// Guarded: the holder's lease changes and SET run; others get 0 or nil.
	lk := h("res:lock", "abc", 1)
	out = append(out,
		sscenario{name: "guarded: holder renews with every expiry command", script: rewrite.Guarded, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "abc", "NX", "PX", "30000")...),
			do(intR(1), grd(lk, "0", "PEXPIRE", "60000")...),
			pttl("res:lock", 59000, 60000),
			do(intR(1), grd(lk, "0", "EXPIRE", "120")...),
			pttl("res:lock", 119000, 120000),
			do(intR(1), grd(lk, "0", "PEXPIREAT", strconv.FormatInt(nowMS+90000, 10))...),
			pttl("res:lock", 88000, 90000),
			do(intR(1), grd(lk, "0", "EXPIREAT", strconv.FormatInt(nowMS/1000+101, 10))...),
			pttl("res:lock", 99000, 101000),
			do(intR(0), grd(lk, "0", "PEXPIRE", "1000", "GT")...),
			do(intR(1), grd(lk, "0", "PERSIST")...),
			do(intR(-1), "PTTL", "res:lock"),
			do(okR, grd(lk, "nil", "SET", "abc", "XX", "PX", "30000")...),
			pttl("res:lock", 29000, 30000),
			do(bulkR("abc"), grd(lk, "nil", "SET", "def", "XX", "KEEPTTL", "GET")...),
			do(bulkR("def"), "GET", "res:lock"),
			pttl("res:lock", 29000, 30000),
			// The value changed: the old one no longer passes, the new one does.
			do(intR(0), grd(lk, "0", "PEXPIRE", "60000")...),
			do(intR(1), grd(h("res:lock", "def", 1), "0", "PEXPIRE", "60000")...),
			do(bulkR("1"), "GET", ctr("res:lock")),
		}},
		sscenario{name: "guarded: holder's GETEX", script: rewrite.Guarded, protos: both, gap: "getex", steps: []sstep{
			do(intR(1), acq("res:lock", "abc", "NX", "PX", "30000")...),
			do(bulkR("abc"), grd(lk, "nil", "GETEX", "PX", "5000")...),
			pttl("res:lock", 4000, 5000),
			do(bulkR("abc"), grd(lk, "nil", "GETEX", "PERSIST")...),
			do(intR(-1), "PTTL", "res:lock"),
			do(falseR, grd(h("res:lock", "abc", 2), "nil", "GETEX", "PX", "5000")...),
			do(intR(-1), "PTTL", "res:lock"),
		}},
		sscenario{name: "guarded: a stranger changes nothing", script: rewrite.Guarded, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "abc", "NX", "PX", "30000")...),
			do(intR(0), grd(h("res:lock", "xyz", 1), "0", "PEXPIRE", "60000")...),
			do(intR(0), grd(h("res:lock", "xyz", 1), "0", "EXPIRE", "60")...),
			do(intR(0), grd(h("res:lock", "xyz", 1), "0", "PERSIST")...),
			do(falseR, grd(h("res:lock", "xyz", 1), "nil", "GETEX", "PERSIST")...),
			do(falseR, grd(h("res:lock", "xyz", 1), "nil", "SET", "xyz", "XX", "PX", "60000")...),
			do(bulkR("abc"), "GET", "res:lock"),
			pttl("res:lock", 29000, 30000),
		}},
		sscenario{name: "guarded: the stale holder after a successor", script: rewrite.Guarded, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "abc", "NX", "PX", shortPX)...),
			lapse(wait, do(falseR, grd(lk, "nil", "GETEX", "PX", "30000")...)),
			do(intR(0), grd(lk, "0", "PEXPIRE", "30000")...),
			do(intR(2), acq("res:lock", "xyz", "NX", "PX", "30000")...),
			do(intR(0), grd(lk, "0", "PEXPIRE", "30000")...),
			do(falseR, grd(lk, "nil", "SET", "abc", "XX", "PX", "30000")...),
			do(bulkR("xyz"), "GET", "res:lock"),
		}},
		sscenario{name: "guarded: same value 1, told apart by grant", script: rewrite.Guarded, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "1", "NX", "PX", shortPX)...),
			lapse(wait, do(intR(2), acq("res:lock", "1", "NX", "PX", "30000")...)),
			do(intR(0), grd(h("res:lock", "1", 1), "0", "PEXPIRE", "60000")...),
			pttl("res:lock", 29000, 30000),
			do(intR(1), grd(h("res:lock", "1", 2), "0", "PEXPIRE", "60000")...),
			pttl("res:lock", 59000, 60000),
		}},
		sscenario{name: "guarded: holder's expiry in the past deletes the lock", script: rewrite.Guarded, protos: both, steps: []sstep{
			do(intR(1), acq("res:lock", "abc", "NX", "PX", "30000")...),
			do(intR(1), grd(lk, "0", "PEXPIRE", "0")...),
			do(intR(0), "EXISTS", "res:lock"),
		}},
	)

	// Fenced: the seed's readout under highest, current, several checks,
	// a failing command, a nil reply.
	data := "{r}:data"
	f := func(token int64) []check { return []check{{"{r}:fence", token, "highest", data}} }
	set := func(token int64, v string) []string { return fen(f(token), []string{data}, "SET", data, v) }
	out = append(out,
		sscenario{name: "fenced: seed readout under highest (33 refused, 34 accepted, 35 accepted and highest)", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(okR, "SET", "{r}:fence", "32"),
			do(intR(33), acqC("{r}:flock", "{r}:fence", "A", "NX", "PX", shortPX)...), // A stalls past its lease
			lapse(wait, do(intR(34), acqC("{r}:flock", "{r}:fence", "B", "NX", "PX", shortPX)...)),
			do(okR, set(34, "by 34")...), // the resource has seen 34
			do(bulkR("34"), "HGET", "{r}:fence:high", data),
			do(staleHighest(data, 33, 34), set(33, "by 33")...),
			do(bulkR("by 34"), "GET", data),
			do(bulkR("34"), "HGET", "{r}:fence:high", data),
			do(okR, set(34, "by 34 again")...),
			lapse(wait, do(intR(35), acqC("{r}:flock", "{r}:fence", "C", "NX", "PX", "30000")...)),
			do(okR, set(35, "by 35")...),
			do(bulkR("35"), "HGET", "{r}:fence:high", data),
			do(staleHighest(data, 34, 35), set(34, "late 34")...),
			do(staleHighest(data, 33, 35), set(33, "late 33")...),
			do(bulkR("by 35"), "GET", data),
			do(pairsR(data, "35"), "HGETALL", "{r}:fence:high"),
		}},
		sscenario{name: "fenced: a key with CR LF cannot break the STALE error line", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(intR(1), "HSET", "{r}:fence:high", "{r}:x\r\n+OK", "9"),
			// Valkey turns CR and LF in a script's error into spaces.
			do(staleHighest("{r}:x  +OK", 8, 9), fen([]check{{"{r}:fence", 8, "highest", "{r}:x\r\n+OK"}}, []string{"{r}:x\r\n+OK"}, "SET", "{r}:x\r\n+OK", "v")...),
		}},
		sscenario{name: "fenced: current (the token must be the latest grant)", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(staleCurrent("{c}:cdata", 1, 0), fen([]check{{"{c}:cfence", 1, "current", "{c}:cdata"}}, []string{"{c}:cdata"}, "INCR", "{c}:cdata")...),
			do(okR, "SET", "{c}:cfence", "34"),
			do(staleCurrent("{c}:cdata", 33, 34), fen([]check{{"{c}:cfence", 33, "current", "{c}:cdata"}}, []string{"{c}:cdata"}, "INCR", "{c}:cdata")...),
			do(intR(0), "EXISTS", "{c}:cdata"),
			do(intR(1), fen([]check{{"{c}:cfence", 34, "current", "{c}:cdata"}}, []string{"{c}:cdata"}, "INCR", "{c}:cdata")...),
			do(staleCurrent("{c}:cdata", 35, 34), fen([]check{{"{c}:cfence", 35, "current", "{c}:cdata"}}, []string{"{c}:cdata"}, "INCR", "{c}:cdata")...),
			do(intR(0), "EXISTS", "{c}:cfence:high"), // current records nothing
			do(bulkR("1"), "GET", "{c}:cdata"),
		}},
		sscenario{name: "fenced: several checks, nothing written when one fails", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(intR(1), "HSET", "{b}:fence:high", "{b}:data", "50"),
			do(okR, "SET", "{a}:fence", "7"),
			do(okR, "SET", "{a}:data", "x"),
			do(okR, "SET", "{b}:data", "y"),
			// {b}:data has seen 50: 45 is refused, and {a}:data is not deleted either.
			do(staleHighest("{b}:data", 45, 50), fen([]check{{"{a}:fence", 40, "highest", "{a}:data"}, {"{b}:fence", 45, "highest", "{b}:data"}},
				[]string{"{a}:data", "{b}:data"}, "DEL", "{a}:data", "{b}:data")...),
			do(intR(2), "EXISTS", "{a}:data", "{b}:data"),
			do(intR(0), "EXISTS", "{a}:fence:high"),
			// A current check that fails after a highest one that passes.
			do(staleCurrent("{a}:data", 6, 7), fen([]check{{"{b}:fence", 51, "highest", "{b}:data"}, {"{a}:fence", 6, "current", "{a}:data"}},
				[]string{"{a}:data", "{b}:data"}, "DEL", "{a}:data", "{b}:data")...),
			do(intR(2), "EXISTS", "{a}:data", "{b}:data"),
			do(bulkR("50"), "HGET", "{b}:fence:high", "{b}:data"),
			// Both pass: both deleted, each highest recorded.
			do(intR(2), fen([]check{{"{a}:fence", 40, "highest", "{a}:data"}, {"{b}:fence", 50, "highest", "{b}:data"}},
				[]string{"{a}:data", "{b}:data"}, "DEL", "{a}:data", "{b}:data")...),
			do(bulkR("40"), "HGET", "{a}:fence:high", "{a}:data"),
			do(bulkR("50"), "HGET", "{b}:fence:high", "{b}:data"),
			do(intR(0), fen([]check{{"{a}:fence", 7, "current", "{a}:data"}, {"{b}:fence", 51, "highest", "{b}:data"}},
				[]string{"{a}:data", "{b}:data"}, "DEL", "{a}:data", "{b}:data")...),
			do(bulkR("51"), "HGET", "{b}:fence:high", "{b}:data"),
			do(bulkR("40"), "HGET", "{a}:fence:high", "{a}:data"),
		}},
		sscenario{name: "fenced: MSET of two guarded keys", script: rewrite.Fenced, protos: both, gap: "mset", steps: []sstep{
			do(intR(1), "HSET", "{b}:fence:high", "{b}:data", "50"),
			do(staleHighest("{b}:data", 45, 50), fen([]check{{"{a}:fence", 40, "highest", "{a}:data"}, {"{b}:fence", 45, "highest", "{b}:data"}},
				[]string{"{a}:data", "{b}:data"}, "MSET", "{a}:data", "x", "{b}:data", "y")...),
			do(intR(0), "EXISTS", "{a}:data", "{b}:data"),
			do(okR, fen([]check{{"{a}:fence", 40, "highest", "{a}:data"}, {"{b}:fence", 50, "highest", "{b}:data"}},
				[]string{"{a}:data", "{b}:data"}, "MSET", "{a}:data", "x", "{b}:data", "y")...),
			do(bulkR("40"), "HGET", "{a}:fence:high", "{a}:data"),
		}},
		sscenario{name: "fenced: a failing command leaves the highest unchanged", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(okR, set(34, "a string")...),
			do(errR("WRONGTYPE Operation against a key holding the wrong kind of value"), fen(f(35), []string{data}, "HSET", data, "f", "v")...),
			do(bulkR("34"), "HGET", "{r}:fence:high", data),
			do(bulkR("a string"), "GET", data),
			do(intR(1), fen(f(35), []string{data}, "DEL", data)...),
			do(bulkR("35"), "HGET", "{r}:fence:high", data),
		}},
		sscenario{name: "fenced: a nil reply passes through", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(falseR, fen(f(3), []string{data}, "SET", data, "v", "XX")...),
			do(intR(0), "EXISTS", data),
			do(nullR, fen(f(3), []string{data}, "GET", data)...),
			do(bulkR("3"), "HGET", "{r}:fence:high", data),
		}},
	)

	// The same stories as Decide plans them: the plans' KEYS/ARGV must fit
	// the scripts.
	out = append(out, decidedScenarios(tb)...)
	return out
}

// decidedScenarios build steps from Decide's plans for sessions holding
// the grants the steps before them mint.
func decidedScenarios(tb testing.TB) []sscenario {
	d := testDecider(tb, testConfig, "")
	plan := func(s *fakeSession, words ...string) []string {
		p := d.Decide(bs(words...), s, make([]keyspec.Key, 0, 8))
		if p.Kind != rewrite.Run {
			tb.Fatalf("Decide(%q) = %+v, want Run", words, p)
		}
		return evalArgs(p)
	}
	w := world{
		"conn:A": {"resource:lock": {value: "abc", number: 1}, "{r}:flock": {value: "A", number: 33}},
		"conn:B": {"resource:lock": {value: "xyz", number: 2}, "{r}:flock": {value: "B", number: 34}},
		"conn:C": {"{r}:flock": {value: "C", number: 35}},
	}
	A := &fakeSession{conn: "conn:A", w: w}
	B := &fakeSession{conn: "conn:B", w: w}
	C := &fakeSession{conn: "conn:C", w: w}
	// Who holds the lock when each plan is made does not change the
	// script for the holder's own commands: one world serves all steps.
	return []sscenario{
		{name: "decided: seed release", script: rewrite.Release, protos: []int{2, 3}, steps: []sstep{
			do(intR(1), plan(A, "SET", "resource:lock", "abc", "NX", "PX", shortPX)...),
			lapse(wait, do(intR(2), plan(B, "SET", "resource:lock", "xyz", "NX", "PX", "30000")...)),
			do(intR(0), plan(A, "PEXPIRE", "resource:lock", "30000")...),
			do(intR(0), plan(A, "DEL", "resource:lock")...),
			do(bulkR("xyz"), "GET", "resource:lock"),
			do(intR(1), plan(B, "PEXPIRE", "resource:lock", "60000")...),
			do(okR, "SET", "plain", "p"),
			do(intR(2), plan(B, "DEL", "plain", "resource:lock", "other")...),
		}},
		{name: "decided: seed fencing", script: rewrite.Fenced, protos: []int{2, 3}, steps: []sstep{
			do(okR, "SET", "{r}:fence", "32"),
			do(intR(33), plan(A, "SET", "{r}:flock", "A", "NX", "PX", shortPX)...),
			lapse(wait, do(intR(34), plan(B, "SET", "{r}:flock", "B", "NX", "PX", shortPX)...)),
			do(okR, plan(B, "SET", "{r}:data", "by 34")...),
			do(staleHighest("{r}:data", 33, 34), plan(A, "SET", "{r}:data", "by 33")...),
			lapse(wait, do(intR(35), plan(C, "SET", "{r}:flock", "C", "NX", "PX", "30000")...)),
			do(intR(1), plan(C, "HSET", "{r}:items:1", "f", "v")...),
			do(okR, plan(C, "SET", "{r}:data", "by 35")...),
			do(staleHighest("{r}:data", 34, 35), plan(B, "SET", "{r}:data", "late")...),
			do(bulkR("by 35"), "GET", "{r}:data"),
			do(pairsR("{r}:data", "35", "{r}:items:1", "35"), "HGETALL", "{r}:fence:high"),
			do(intR(1), plan(C, "DEL", "{r}:flock")...),
		}},
	}
}

// optionWords names SET options without their numbers ("NX PXAT").
func optionWords(opts []string) string {
	var w []string
	for _, o := range opts {
		if _, err := strconv.Atoi(o); err != nil {
			w = append(w, o)
		}
	}
	return strings.Join(w, " ")
}

func gapHit(sc sscenario, reply []byte) bool {
	return sc.gap != "" && bytes.Contains(reply, []byte("luaeval: command '"+sc.gap+"' is not implemented"))
}

func protosOf(sc sscenario) []int {
	if len(sc.protos) == 0 {
		return []int{2}
	}
	return sc.protos
}

func checkStep(t *testing.T, i int, st sstep, proto int, got []byte) {
	t.Helper()
	if st.ttl[1] > 0 {
		n, ok := parseInt(got)
		if !ok || n < st.ttl[0] || n > st.ttl[1] {
			t.Errorf("step %d %s: %q, want an integer in [%d, %d]", i, show(st.args), got, st.ttl[0], st.ttl[1])
		}
		return
	}
	if st.want != nil {
		if want := st.want(proto); string(got) != want {
			t.Errorf("step %d %s:\n got %q\nwant %q", i, show(st.args), got, want)
		}
	}
}

func parseInt(b []byte) (int64, bool) {
	if len(b) < 4 || b[0] != ':' || !bytes.HasSuffix(b, []byte("\r\n")) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[1:len(b)-2]), 10, 64)
	return n, err == nil
}

// show names a step briefly: a script by its name, not its body.
func show(args []string) string {
	if len(args) > 1 && args[0] == "EVAL" {
		for _, s := range rewrite.Scripts {
			if s.Body == args[1] {
				return fmt.Sprintf("%s%q", s.Name, args[2:])
			}
		}
	}
	return fmt.Sprintf("%q", args)
}

// TestScriptsOffline runs every scenario on luaeval with a frozen clock:
// no server, no sleeping.
func TestScriptsOffline(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	for _, sc := range scriptScenarios(t, now) {
		for _, proto := range protosOf(sc) {
			t.Run(fmt.Sprintf("%s/resp%d", sc.name, proto), func(t *testing.T) {
				st := luaeval.New()
				st.SetTime(now)
				for i, s := range sc.steps {
					if s.lapse > 0 {
						st.Advance(s.lapse)
					}
					got := st.DoProto(proto, s.args...)
					if gapHit(sc, got) {
						t.Skipf("step %d needs %s, which luaeval does not implement", i, strings.ToUpper(sc.gap))
					}
					checkStep(t, i, s, proto, got)
				}
				if sc.gap != "" {
					t.Errorf("luaeval implements %s now: drop the scenario's gap mark", strings.ToUpper(sc.gap))
				}
			})
		}
	}
}

// TestScriptsValkey replays the scenarios on a real valkey-server and on
// luaeval (on the wall clock) in lockstep: every reply must be the same
// bytes on both, and the expected one.
func TestScriptsValkey(t *testing.T) {
	srv := valkeytest.Start(t)
	conns := map[int]*rawConn{2: dialRaw(t, srv.Addr, 2), 3: dialRaw(t, srv.Addr, 3)}
	now := time.Now()
	for _, sc := range scriptScenarios(t, now) {
		for _, proto := range protosOf(sc) {
			t.Run(fmt.Sprintf("%s/resp%d", sc.name, proto), func(t *testing.T) {
				rc := conns[proto]
				rc.Do(t, "FLUSHALL")
				rc.Do(t, "SCRIPT", "FLUSH")
				st := luaeval.New()
				diverged := false
				for i, s := range sc.steps {
					if s.lapse > 0 {
						time.Sleep(s.lapse)
					}
					real := rc.Do(t, s.args...)
					off := st.DoProto(proto, s.args...)
					checkStep(t, i, s, proto, real)
					if diverged = diverged || gapHit(sc, off); diverged {
						continue // luaeval could not run it: its keyspace differs from here on
					}
					if s.ttl[1] > 0 {
						a, ok1 := parseInt(real)
						b, ok2 := parseInt(off)
						if !ok1 || !ok2 || a-b > 100 || b-a > 100 {
							t.Errorf("step %d %s: valkey %q, luaeval %q", i, show(s.args), real, off)
						}
						continue
					}
					if !bytes.Equal(real, off) {
						t.Errorf("step %d %s: replies differ\n valkey  %q\n luaeval %q", i, show(s.args), real, off)
					}
				}
			})
		}
	}
}

// TestScriptsCovered: every script lockproxy sends has scenarios.
func TestScriptsCovered(t *testing.T) {
	seen := map[*rewrite.Script]int{}
	for _, sc := range scriptScenarios(t, time.Now()) {
		seen[sc.script]++
	}
	for _, s := range rewrite.Scripts {
		if seen[s] == 0 {
			t.Errorf("script %s has no scenario", s.Name)
		}
	}
}

// TestScriptSHA: the SHA the proxy sends with EVALSHA is the one the
// server computes, and before SCRIPT LOAD EVALSHA answers NOSCRIPT (which
// makes the proxy fall back to EVAL).
func TestScriptSHA(t *testing.T) {
	srv := valkeytest.Start(t)
	rc := dialRaw(t, srv.Addr, 2)
	st := luaeval.New()
	for _, s := range rewrite.Scripts {
		if s.SHA != luaeval.SHA1Hex(s.Body) || len(s.SHA) != 40 {
			t.Errorf("%s: SHA %s", s.Name, s.SHA)
		}
		for _, args := range [][]string{
			{"EVALSHA", s.SHA, "0"},
			{"SCRIPT", "LOAD", s.Body},
			{"SCRIPT", "EXISTS", s.SHA},
		} {
			real, off := rc.Do(t, args...), st.Do(args...)
			if !bytes.Equal(real, off) {
				t.Errorf("%s %s: valkey %q, luaeval %q", s.Name, args[0], real, off)
			}
			if args[1] == "LOAD" && string(real) != bulkR(s.SHA)(2) {
				t.Errorf("%s: SCRIPT LOAD answered %q, want SHA %s", s.Name, real, s.SHA)
			}
		}
	}
	// EVALSHA after the load gives EVAL's reply.
	args := acq("res:lock", "abc", "NX", "PX", "30000")
	args[0], args[1] = "EVALSHA", rewrite.Acquire.SHA
	if got := rc.Do(t, args...); string(got) != ":1\r\n" {
		t.Errorf("EVALSHA acquire: %q", got)
	}
}

// rawConn is a raw RESP connection: the tests need reply bytes as sent.
type rawConn = valkeytest.Conn

func dialRaw(t *testing.T, addr string, proto int) *rawConn {
	t.Helper()
	return valkeytest.Dial(t, addr, proto)
}

// answerCase is a client command whose Run plan must answer, once shaped,
// exactly what the command itself answers on the same keyspace, and leave
// the same keyspace behind (read back with check).
type answerCase struct {
	args  []string
	setup [][]string
	check [][]string
}

// answerWorld: alice holds resource:lock (abc, grant 7) and {r}:flock
// (token 35); answerSetup puts the same in Valkey.
func answerWorld() *fakeSession {
	w := world{"conn:alice": {"resource:lock": {value: "abc", number: 7}, "{r}:flock": {value: "tok", number: 35}}}
	return &fakeSession{conn: "conn:alice", w: w}
}

var answerSetup = [][]string{
	{"SET", "resource:lock", "abc", "PX", "30000"},
	{"SET", "{resource:lock}:lockproxy:grants", "7"},
	{"SET", "{r}:flock", "tok", "PX", "30000"},
	{"SET", "{r}:fence", "35"},
}

// runAnswerCases compares, on a real server, the command sent as is with
// its plan's script sent instead, under RESP2 and RESP3.
func runAnswerCases(t *testing.T, cases []answerCase) {
	srv := valkeytest.Start(t)
	d := testDecider(t, testConfig, "")
	s := answerWorld()
	for _, proto := range []int{2, 3} {
		rc := dialRaw(t, srv.Addr, proto)
		for _, c := range cases {
			p := d.Decide(bs(c.args...), s, nil)
			if p.Kind != rewrite.Run {
				t.Errorf("%q: plan %s, want Run", c.args, planKinds[p.Kind])
				continue
			}
			var direct, scripted []string
			var ttls [2][]int64
			for i, run := range []func() []byte{
				func() []byte { return rc.Do(t, c.args...) },
				func() []byte { return p.Shape.Reply(rc.Do(t, evalArgs(p)...), proto) },
			} {
				rc.Do(t, "FLUSHALL")
				for _, a := range append(append([][]string(nil), answerSetup...), c.setup...) {
					rc.Do(t, a...)
				}
				out := []string{string(run())}
				for _, a := range c.check {
					if a[0] == "PTTL" { // compared with a tolerance: the two runs are ms apart
						n, _ := parseInt(rc.Do(t, a...))
						ttls[i] = append(ttls[i], n)
						continue
					}
					out = append(out, string(rc.Do(t, a...)))
				}
				if i == 0 {
					direct = out
				} else {
					scripted = out
				}
			}
			if fmt.Sprint(direct) != fmt.Sprint(scripted) {
				t.Errorf("RESP%d %q:\n as sent:     %q\n as its plan: %q", proto, c.args, direct, scripted)
			}
			for j := range ttls[0] {
				a, b := ttls[0][j], ttls[1][j]
				if (a < 0 || b < 0) && a != b || a-b > 200 || b-a > 200 {
					t.Errorf("RESP%d %q: PTTL after it %d as sent, %d as its plan", proto, c.args, a, b)
				}
			}
		}
	}
}

// TestPlansAnswerAsTheCommand: for the holder, lockproxy's scripts are
// invisible: acquisition, release, renewal and fenced writes answer as the
// commands they replace.
func TestPlansAnswerAsTheCommand(t *testing.T) {
	lockState := [][]string{{"GET", "resource:lock"}, {"PTTL", "resource:lock"}}
	free := [][]string{{"DEL", "resource:lock"}}
	var cases []answerCase
	for _, opts := range [][]string{
		{"NX", "PX", "30000"}, {"px", "30000", "nx"}, {"NX", "EX", "30"}, {"EX", "30", "NX"},
		{"NX", "PXAT", strconv.FormatInt(time.Now().UnixMilli()+30000, 10)},
		{"EXAT", strconv.FormatInt(time.Now().Unix()+30, 10), "NX"}, {"NX", "KEEPTTL"}, {"NX"},
	} {
		args := append([]string{"SET", "resource:lock", "new"}, opts...)
		cases = append(cases,
			answerCase{args: args, setup: free, check: lockState}, // acquired
			answerCase{args: args, check: lockState},              // contention
		)
	}
	cases = append(cases,
		answerCase{args: []string{"DEL", "resource:lock"}, check: lockState},
		answerCase{args: []string{"UNLINK", "plain", "resource:lock", "gone"}, setup: [][]string{{"SET", "plain", "p"}}, check: [][]string{{"EXISTS", "plain", "resource:lock"}}},
		answerCase{args: []string{"PEXPIRE", "resource:lock", "60000"}, check: lockState},
		answerCase{args: []string{"PEXPIRE", "resource:lock", "1000", "GT"}, check: lockState},
		answerCase{args: []string{"EXPIRE", "resource:lock", "60", "NX"}, check: lockState},
		answerCase{args: []string{"PEXPIREAT", "resource:lock", strconv.FormatInt(time.Now().UnixMilli()+90000, 10)}, check: lockState},
		answerCase{args: []string{"EXPIREAT", "resource:lock", "1"}, check: lockState},
		answerCase{args: []string{"PERSIST", "resource:lock"}, check: lockState},
		answerCase{args: []string{"GETEX", "resource:lock", "PX", "5000"}, check: lockState},
		answerCase{args: []string{"GETEX", "resource:lock", "PERSIST"}, check: lockState},
		answerCase{args: []string{"SET", "resource:lock", "abc", "XX", "PX", "60000"}, check: lockState},
		answerCase{args: []string{"SET", "resource:lock", "def", "KEEPTTL", "GET"}, check: lockState},
		answerCase{args: []string{"SET", "{r}:data", "v"}, check: [][]string{{"GET", "{r}:data"}}},
		answerCase{args: []string{"SET", "{r}:data", "v", "XX"}, check: [][]string{{"GET", "{r}:data"}}},
		answerCase{args: []string{"SET", "{r}:data", "v", "GET"}, setup: [][]string{{"SET", "{r}:data", "old"}}},
		answerCase{args: []string{"INCRBY", "{r}:data", "5"}, check: [][]string{{"GET", "{r}:data"}}},
		answerCase{args: []string{"HSET", "{r}:items:1", "a", "1", "b", "2"}, check: [][]string{{"HGETALL", "{r}:items:1"}}},
		answerCase{args: []string{"HSET", "{r}:data", "a", "1"}, setup: [][]string{{"SET", "{r}:data", "str"}}},
		answerCase{args: []string{"DEL", "{r}:data", "{r}:items:1"}, setup: [][]string{{"SET", "{r}:data", "x"}}},
		answerCase{args: []string{"RPUSH", "{r}:items:l", "a", "b"}},
		answerCase{args: []string{"LPOP", "{r}:items:l", "1"}, setup: [][]string{{"RPUSH", "{r}:items:l", "a", "b"}}},
		answerCase{args: []string{"EXPIRE", "{r}:data", "100"}, setup: [][]string{{"SET", "{r}:data", "x"}}},
	)
	runAnswerCases(t, cases)
}
