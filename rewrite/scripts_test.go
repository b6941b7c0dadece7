package rewrite_test

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/luaeval"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
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

// sstep is one step of a scenario: either a command sent as it is (who
// nil: setup and inspection), or a client's command as lockproxy handles
// it: Decide for session who, the plan's script sent instead, and its reply
// folded (rewrite.Fold) into what the client sees. want is checked against
// what the client sees, fx against the effects Fold filled in.
type sstep struct {
	who   *fakeSession
	args  []string
	lapse time.Duration // before the step: the fake clock moves / the test sleeps
	want  reply         // nil: only luaeval and Valkey must agree
	code  string        // the client sees a refusal with this code word
	ttl   [2]int64      // hi != 0: an integer reply (PTTL) in [lo, hi], backends within 100 ms and the time the scenario took
	fx    []string      // effects after Fold (fmtEffect), when not nil
	held  time.Duration // > 0: the first effect's Held (offline exactly, on Valkey at least)
	rec   *recWant      // the step reads an owner record (HGET)
}

// recWant is what an owner record must hold: "<grant> <acquired ms>
// <lease end ms> <value>".
type recWant struct {
	grant int64 // 0: no record
	value string
	// lease is lease end minus acquired, in ms (offline exactly, on Valkey
	// within recSlack); -1: lease end 0 (no expiry); -2: not checked.
	lease int64
}

// recSlack is how far apart, in ms, the record times of luaeval and Valkey
// (running in lockstep on the wall clock) may be.
const recSlack = 150

type sscenario struct {
	name   string
	script *rewrite.Script // a script under test (coverage)
	protos []int           // default RESP2 only
	keep   time.Duration   // keep_lapsed; 0: the Decider's default (10 minutes)
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

// as is a client command of session who, handled as lockproxy does.
func as(who *fakeSession, want reply, args ...string) sstep {
	return sstep{who: who, args: args, want: want}
}

// refused is a client command that the client sees refused with code.
func refused(who *fakeSession, code string, args ...string) sstep {
	return sstep{who: who, args: args, code: code}
}

// fx sets the effects the step must leave after Fold.
func fx(s sstep, effects ...string) sstep {
	if effects == nil {
		effects = []string{}
	}
	s.fx = effects
	return s
}

// lapse makes the next step happen d later.
func lapse(d time.Duration, s sstep) sstep { s.lapse = d; return s }

// rec reads owner's record of lock: grant 0 means there must be none.
func rec(lock, owner string, grant int64, value string, lease int64) sstep {
	return sstep{args: []string{"HGET", recs(lock), owner}, rec: &recWant{grant: grant, value: value, lease: lease}}
}

func noRec(lock, owner string) sstep { return rec(lock, owner, 0, "", 0) }

func ctr(lock string) string  { return string(rewrite.CounterKey([]byte(lock))) }
func recs(lock string) string { return string(rewrite.RecordsKey([]byte(lock))) }

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

// keepMS is the default keep_lapsed in ms, as the records hash TTL adds it.
const keepMS = 600000

// The owners of the scenarios: A and B take turns at a lock, C never
// holds one. Each is its own connection, client name and host.
var (
	ownerA = &fakeSession{conn: "conn:A", name: "name:A", addr: "10.0.0.1"}
	ownerB = &fakeSession{conn: "conn:B", name: "name:B", addr: "10.0.0.2"}
	ownerC = &fakeSession{conn: "conn:C", name: "name:C", addr: "10.0.0.3"}
)

// scriptScenarios builds the scenarios; now anchors PXAT/EXAT arguments
// (the offline clock is frozen at now).
func scriptScenarios(now time.Time) []sscenario {
	both := []int{2, 3}
	nowMS := now.UnixMilli()
	A, B, C := ownerA, ownerB, ownerC
	const res = "resource:lock"
	resRecs := recs(res)
	var out []sscenario

	// Acquire: every SET option order and expiry form. Success mints grant
	// 1 and records it; contention answers nil and leaves counter and
	// records alone. The records hash lives lease + keep_lapsed, and has
	// no expiry while it records a lock without one.
	for _, o := range []struct {
		opts   []string
		lo, hi int64 // PTTL after acquiring; hi 0: no expiry (-1)
		lease  int64 // the record's lease (-1 none, -2 unchecked)
	}{
		{[]string{"NX", "PX", "30000"}, 29000, 30000, 30000},
		{[]string{"PX", "30000", "NX"}, 29000, 30000, 30000},
		{[]string{"nx", "ex", "30"}, 29000, 30000, 30000},
		{[]string{"EX", "30", "NX"}, 29000, 30000, 30000},
		{[]string{"NX", "PXAT", strconv.FormatInt(nowMS+30000, 10)}, 25000, 30000, -2},
		{[]string{"EXAT", strconv.FormatInt(nowMS/1000+31, 10), "nx"}, 25000, 31000, -2},
		{[]string{"NX", "KEEPTTL"}, 0, 0, -1},
		{[]string{"KEEPTTL", "NX"}, 0, 0, -1},
		{[]string{"NX"}, 0, 0, -1},
	} {
		ttl, recTTL := do(intR(-1), "PTTL", res), do(intR(-1), "PTTL", resRecs)
		if o.hi > 0 {
			ttl, recTTL = pttl(res, o.lo, o.hi), pttl(resRecs, keepMS+o.lo, keepMS+o.hi)
		}
		set := func(value string) []string { return append([]string{"SET", res, value}, o.opts...) }
		out = append(out, sscenario{name: "acquire " + optionWords(o.opts), script: rewrite.Acquire, protos: both, steps: []sstep{
			fx(as(A, okR, set("abc")...), "Grant SET key=resource:lock rule=0 owner=conn:A value=abc grant=1"),
			do(bulkR("1"), "GET", ctr(res)),
			do(bulkR("abc"), "GET", res),
			ttl,
			rec(res, "conn:A", 1, "abc", o.lease),
			recTTL,
			fx(as(B, nullR, set("xyz")...), "Grant SET key=resource:lock rule=0 owner=conn:B value=xyz"),
			do(bulkR("1"), "GET", ctr(res)),
			do(bulkR("abc"), "GET", res),
			noRec(res, "conn:B"),
			do(intR(-1), "PTTL", ctr(res)), // the counter never expires
		}})
	}
	out = append(out,
		sscenario{name: "acquire: SET NX GET (nil: it took the lock)", script: rewrite.Acquire, protos: both, steps: []sstep{
			fx(as(A, nullR, "SET", res, "abc", "NX", "GET", "PX", "30000"), "Grant SET key=resource:lock rule=0 owner=conn:A value=abc grant=1"),
			rec(res, "conn:A", 1, "abc", 30000),
			fx(as(B, bulkR("abc"), "SET", res, "xyz", "NX", "GET", "PX", "30000"), "Grant SET key=resource:lock rule=0 owner=conn:B value=xyz"),
			noRec(res, "conn:B"),
			fx(as(A, intR(1), "DEL", res), "Released DEL key=resource:lock rule=0 owner=conn:A value=abc grant=1 outcome=released valuelen=3"),
			do(intR(0), "EXISTS", res, resRecs),
		}},
		sscenario{name: "acquire: SETNX, a lock without lease, then renewed by its holder", script: rewrite.Acquire, protos: both, steps: []sstep{
			fx(as(A, intR(1), "SETNX", res, "abc"), "Grant SETNX key=resource:lock rule=0 owner=conn:A value=abc grant=1"),
			rec(res, "conn:A", 1, "abc", -1),
			do(intR(-1), "PTTL", resRecs),
			do(intR(1), "EXISTS", resRecs),
			fx(as(B, intR(0), "SETNX", res, "x"), "Grant SETNX key=resource:lock rule=0 owner=conn:B value=x"),
			refused(B, "NOTOWNER", "PEXPIRE", res, "30000"),
			fx(as(A, intR(1), "PEXPIRE", res, "30000"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:A acted"),
			rec(res, "conn:A", 1, "abc", 30000),
			pttl(resRecs, keepMS+29000, keepMS+30000),
			fx(as(A, intR(1), "DEL", res), "Released DEL key=resource:lock rule=0 owner=conn:A value=abc grant=1 outcome=released valuelen=3"),
		}},
		sscenario{name: "acquire mints the seed's tokens 33, 34, 35 from the fence counter", script: rewrite.Acquire, protos: both, steps: []sstep{
			do(okR, "SET", "{r}:fence", "32"),
			fx(as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"), "Grant SET key={r}:flock rule=5 owner=conn:A value=A grant=33"),
			fx(as(A, intR(1), "DEL", "{r}:flock"), "Released DEL key={r}:flock rule=5 owner=conn:A value=A grant=33 outcome=released valuelen=1"),
			fx(as(B, okR, "SET", "{r}:flock", "B", "NX", "PX", "30000"), "Grant SET key={r}:flock rule=5 owner=conn:B value=B grant=34"),
			fx(as(C, nullR, "SET", "{r}:flock", "C", "NX", "PX", "30000"), "Grant SET key={r}:flock rule=5 owner=conn:C value=C"),
			fx(as(B, intR(1), "DEL", "{r}:flock"), "Released DEL key={r}:flock rule=5 owner=conn:B value=B grant=34 outcome=released valuelen=1"),
			fx(as(C, okR, "SET", "{r}:flock", "C", "NX", "PX", "30000"), "Grant SET key={r}:flock rule=5 owner=conn:C value=C grant=35"),
			rec("{r}:flock", "conn:C", 35, "C", 30000),
		}},
		sscenario{name: "acquire over a key of another type: Valkey's error, no grant", script: rewrite.Acquire, protos: both, steps: []sstep{
			do(intR(1), "HSET", res, "f", "v"),
			fx(as(A, errR("WRONGTYPE Operation against a key holding the wrong kind of value"), "SET", res, "abc", "NX", "GET"),
				"Grant SET key=resource:lock rule=0 owner=conn:A value=abc"),
			do(nullR, "GET", ctr(res)),
			do(intR(0), "EXISTS", resRecs),
		}},
		sscenario{name: "acquire and fenced with a big grant number keep it as digits", script: rewrite.Acquire, protos: both, steps: []sstep{
			// The counter is Valkey's integer; the record must hold the
			// same digits, or the holder is no longer recognised.
			do(okR, "SET", ctr(res), "123456789012345"),
			fx(as(A, okR, "SET", res, "abc", "NX", "PX", "30000"), "Grant SET key=resource:lock rule=0 owner=conn:A value=abc grant=123456789012346"),
			rec(res, "conn:A", 123456789012346, "abc", 30000),
			fx(as(A, intR(1), "PEXPIRE", res, "60000"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:A acted"),
			fx(as(A, intR(1), "DEL", res), "Released DEL key=resource:lock rule=0 owner=conn:A value=abc grant=123456789012346 outcome=released valuelen=3"),
			// The same for fencing tokens: the token Fold reads, the mark
			// and the STALE sentence keep the digits.
			do(okR, "SET", "{r}:fence", "123456789012345"),
			fx(as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"), "Grant SET key={r}:flock rule=5 owner=conn:A value=A grant=123456789012346"),
			fx(as(A, okR, "SET", "{r}:data", "v"), "FencedWrite SET key={r}:data rule=5 owner=conn:A grant=123456789012346"),
			do(bulkR("123456789012346"), "HGET", "{r}:fence:high", "{r}:data"),
			do(intR(0), "HSET", "{r}:fence:high", "{r}:data", "123456789012347"),
			as(A, staleHighest("{r}:data", 123456789012346, 123456789012347), "SET", "{r}:data", "w"),
			do(okR, "SET", "{c}:cfence", "123456789012345"),
			as(A, okR, "SET", "{c}:clock", "A", "NX", "PX", "30000"),
			fx(as(A, intR(1), "INCR", "{c}:cdata"), "FencedWrite INCR key={c}:cdata rule=6 owner=conn:A grant=123456789012346"),
			do(okR, "SET", "{c}:cfence", "123456789012347"),
			as(A, staleCurrent("{c}:cdata", 123456789012346, 123456789012347), "INCR", "{c}:cdata"),
		}},
	)

	// Release, renewal and the holder's SET: the seed's story with two
	// owners, told through Decide, Fold and the scripts.
	out = append(out,
		sscenario{name: "seed: a blind DEL deletes the successor's lock (the hazard, without lockproxy)", script: rewrite.Release, steps: []sstep{
			do(okR, "SET", res, "abc", "NX", "PX", shortPX),
			lapse(wait, do(okR, "SET", res, "xyz", "NX", "PX", "30000")),
			do(intR(1), "DEL", res),
			do(nullR, "GET", res),
		}},
		sscenario{name: "seed: A lapses, B acquires, A's DEL answers 0 and B's lock stands", script: rewrite.Release, protos: both, steps: []sstep{
			fx(as(A, okR, "SET", res, "abc", "NX", "PX", shortPX), "Grant SET key=resource:lock rule=0 owner=conn:A value=abc grant=1"),
			rec(res, "conn:A", 1, "abc", 20),
			pttl(resRecs, keepMS-1000, keepMS+20),
			lapse(wait, do(nullR, "GET", res)),
			fx(as(B, okR, "SET", res, "xyz", "NX", "PX", "30000"), "Grant SET key=resource:lock rule=0 owner=conn:B value=xyz grant=2"),
			rec(res, "conn:A", 1, "abc", 20), // kept for keep_lapsed
			rec(res, "conn:B", 2, "xyz", 30000),
			pttl(resRecs, keepMS+29000, keepMS+30000),
			// A's renewal and release change nothing and answer what the
			// commands answer on a key that is not A's any more.
			fx(as(A, intR(0), "PEXPIRE", res, "30000"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:A"),
			fx(as(A, nullR, "SET", res, "abc", "XX", "PX", "30000"), "SetValue SET key=resource:lock rule=0 owner=conn:A value=abc"),
			sstep{who: A, args: []string{"DEL", res}, want: intR(0), held: wait,
				fx: []string{"Released DEL key=resource:lock rule=0 owner=conn:A holder=conn:B value=abc grant=1 outcome=superseded lapsed valuelen=3"}},
			do(bulkR("xyz"), "GET", res),
			pttl(res, 29000, 30000),
			noRec(res, "conn:A"), // its release took A's record
			// Now A is no owner at all, and C never was.
			fx(refused(A, "NOTOWNER", "DEL", res), "Refused DEL key=resource:lock rule=0 owner=conn:A"),
			fx(sstep{who: C, args: []string{"DEL", res}, want: errR(`NOTOWNER lockproxy refused DEL of lock key "resource:lock" (rule 1 "*:lock"): Valkey holds no grant of it to this client (owner conn:C, session: connection), so it may be another client's lock; release with the token you acquired it with: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`)},
				"Refused DEL key=resource:lock rule=0 owner=conn:C"),
			fx(sstep{who: C, args: []string{"PEXPIRE", res, "60000"}, want: errR(`NOTOWNER lockproxy refused PEXPIRE of lock key "resource:lock" (rule 1 "*:lock"): Valkey holds no grant of it to this client (owner conn:C, session: connection), and only the client that acquired the lock through lockproxy may change its lease; acquire it with SET key token NX PX ms first`)},
				"Refused PEXPIRE key=resource:lock rule=0 owner=conn:C"),
			fx(sstep{who: C, args: []string{"SET", res, "mine", "XX"}, want: errR(`LOCKED lockproxy refused SET on lock key "resource:lock" (rule 1 "*:lock"): it would overwrite or remove a lock that another client may hold; acquire with SET key token NX PX ms and release with your token: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`)},
				"Refused SET key=resource:lock rule=0 owner=conn:C value=mine"),
			do(bulkR("xyz"), "GET", res),
			// B renews: the lock and its records hash both live longer.
			fx(as(B, intR(1), "PEXPIRE", res, "60000"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:B acted"),
			pttl(res, 59000, 60000),
			rec(res, "conn:B", 2, "xyz", 60000),
			pttl(resRecs, keepMS+59000, keepMS+60000),
			fx(as(B, intR(1), "DEL", res), "Released DEL key=resource:lock rule=0 owner=conn:B value=xyz grant=2 outcome=released valuelen=3"),
			do(intR(0), "EXISTS", res, resRecs),
			do(bulkR("2"), "GET", ctr(res)),
		}},
		sscenario{name: "release: two holders of the value 1 told apart by grant", script: rewrite.Release, protos: both, steps: []sstep{
			as(A, okR, "SET", res, "1", "NX", "PX", shortPX),
			lapse(wait, as(B, okR, "SET", res, "1", "NX", "PX", "30000")),
			fx(as(A, intR(0), "DEL", res), "Released DEL key=resource:lock rule=0 owner=conn:A holder=conn:B value=1 grant=1 outcome=superseded lapsed valuelen=1"),
			do(bulkR("1"), "GET", res),
			fx(as(B, intR(1), "UNLINK", res), "Released UNLINK key=resource:lock rule=0 owner=conn:B value=1 grant=2 outcome=released valuelen=1"),
			do(nullR, "GET", res),
		}},
		sscenario{name: "release: a client_name sibling releases; a failed release keeps the sibling's newer record", script: rewrite.Release, steps: []sstep{
			// named:* locks are held per client name: A2 is another
			// connection of A's application.
			as(A, okR, "SET", "named:a", "v1", "NX", "PX", shortPX),
			lapse(wait, as(B, okR, "SET", "named:a", "v2", "NX", "PX", "30000")),
			as(B, okR, "SET", "named:a", "v2", "XX", "PX", "30000"),
			fx(as(&fakeSession{conn: "conn:B2", name: "name:B"}, intR(1), "DEL", "named:a"),
				"Released DEL key=named:a rule=4 owner=name:B value=v2 grant=2 outcome=released valuelen=2"),
			fx(as(&fakeSession{conn: "conn:A2", name: "name:A"}, intR(0), "DEL", "named:a"),
				"Released DEL key=named:a rule=4 owner=name:A value=v1 grant=1 outcome=superseded lapsed valuelen=2"),
		}},
		sscenario{name: "release: multi-key DEL and UNLINK mixed with plain keys", script: rewrite.Release, protos: both, steps: []sstep{
			do(okR, "SET", "p1", "a"),
			do(okR, "SET", "p2", "b"),
			as(A, okR, "SET", "l1:lock", "v1", "NX", "PX", "30000"),
			as(A, okR, "SET", "l2:lock", "v2", "NX", "PX", "30000"),
			as(B, okR, "SET", "l3:lock", "v3", "NX", "PX", "30000"),
			// l3 is not A's: the whole DEL is refused, nothing deleted.
			fx(refused(A, "NOTOWNER", "DEL", "p1", "p2", "p3", "l1:lock", "l2:lock", "l3:lock"),
				"Kind(0) DEL key=l1:lock rule=0 owner=conn:A plain=3",
				"Kind(0) DEL key=l2:lock rule=0 owner=conn:A plain=3",
				"Refused DEL key=l3:lock rule=0 owner=conn:A plain=3"),
			do(intR(5), "EXISTS", "p1", "p2", "p3", "l1:lock", "l2:lock", "l3:lock"),
			// p1, p2 and A's two locks: 4 (p3 is missing).
			fx(as(A, intR(4), "DEL", "p1", "l1:lock", "p2", "p3", "l2:lock"),
				"Released DEL key=l1:lock rule=0 owner=conn:A value=v1 grant=1 plain=3 outcome=released valuelen=2",
				"Released DEL key=l2:lock rule=0 owner=conn:A value=v2 grant=1 plain=3 outcome=released valuelen=2"),
			do(intR(1), "EXISTS", "p1", "p2", "p3", "l1:lock", "l2:lock", "l3:lock"),
			do(intR(1), "ZADD", "z", "1", "m"),
			do(intR(1), "HSET", "h", "f", "v"),
			fx(as(B, intR(3), "UNLINK", "z", "l3:lock", "h", "l3:lock"),
				"Released UNLINK key=l3:lock rule=0 owner=conn:B value=v3 grant=1 plain=2 outcome=released valuelen=2",
				"Released UNLINK key=l3:lock rule=0 owner=conn:B value=v3 grant=1 plain=2 outcome=released valuelen=2"),
			do(intR(0), "EXISTS", "z", "h", "l3:lock", recs("l3:lock")),
		}},
		sscenario{name: "release: observe and unknown_owner: forward delete as asked, and say whose lock it was", script: rewrite.Release, protos: both, steps: []sstep{
			as(A, okR, "SET", "obs:a", "v", "NX", "PX", "30000"),
			fx(as(B, intR(1), "DEL", "obs:a"), "Released DEL key=obs:a rule=2 owner=conn:B holder=conn:A outcome=forwarded held=none"),
			do(intR(0), "EXISTS", "obs:a"),
			fx(as(B, intR(0), "DEL", "obs:a"), "Released DEL key=obs:a rule=2 owner=conn:B outcome=forwarded held=none"),
			as(A, okR, "SET", "fwd:a", "t", "NX", "PX", "30000"),
			fx(as(B, intR(1), "DEL", "fwd:a"), "Released DEL key=fwd:a rule=3 owner=conn:B holder=conn:A outcome=forwarded held=none"),
			// A's lock was deleted under it: A's own release answers 0.
			fx(as(A, intR(0), "DEL", "fwd:a"), "Released DEL key=fwd:a rule=3 owner=conn:A value=t grant=1 outcome=superseded valuelen=1"),
			fx(as(B, intR(0), "DEL", "fwd:a"), "Released DEL key=fwd:a rule=3 owner=conn:B outcome=forwarded held=none"),
		}},
		sscenario{name: "release: reject refuses the holder's blind DEL (TOKENRELEASE), strangers get NOTOWNER", script: rewrite.Release, protos: both, steps: []sstep{
			as(A, okR, "SET", "rej:a", "t", "NX", "PX", "30000"),
			fx(sstep{who: A, args: []string{"DEL", "rej:a"}, want: errR(`TOKENRELEASE lockproxy refused the blind DEL of lock key "rej:a" (rule 2 "rej:*", release: reject): a blind delete can remove a successor's lock after your lease ran out; release with your token: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`)},
				"Refused DEL key=rej:a rule=1 owner=conn:A"),
			fx(refused(B, "NOTOWNER", "UNLINK", "rej:a"), "Refused UNLINK key=rej:a rule=1 owner=conn:B"),
			do(bulkR("t"), "GET", "rej:a"),
			fx(as(A, intR(1), "PEXPIRE", "rej:a", "60000"), "Renewed PEXPIRE key=rej:a rule=1 owner=conn:A acted"),
			// The token-checked release goes through as it is.
			fx(as(A, intR(1), "EVAL", "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end", "1", "rej:a", "t")),
			do(intR(0), "EXISTS", "rej:a"),
		}},
		sscenario{name: "holder: renews with every expiry command; SET XX KEEPTTL GET moves the record's value", script: rewrite.Holder, protos: both, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", "30000"),
			fx(as(A, intR(1), "PEXPIRE", res, "60000"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:A acted"),
			pttl(res, 59000, 60000),
			as(A, intR(1), "EXPIRE", res, "120"),
			pttl(res, 119000, 120000),
			as(A, intR(1), "PEXPIREAT", res, strconv.FormatInt(nowMS+90000, 10)),
			pttl(res, 85000, 90000),
			as(A, intR(1), "EXPIREAT", res, strconv.FormatInt(nowMS/1000+101, 10)),
			pttl(res, 95000, 101000),
			fx(as(A, intR(0), "PEXPIRE", res, "1000", "GT"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:A acted"),
			as(A, intR(1), "PERSIST", res),
			do(intR(-1), "PTTL", res),
			rec(res, "conn:A", 1, "abc", -1),
			do(intR(-1), "PTTL", resRecs),
			fx(as(A, okR, "SET", res, "abc", "XX", "PX", "30000"), "SetValue SET key=resource:lock rule=0 owner=conn:A value=abc acted"),
			pttl(res, 29000, 30000),
			pttl(resRecs, keepMS+29000, keepMS+30000),
			fx(as(A, bulkR("abc"), "SET", res, "def", "XX", "KEEPTTL", "GET"), "SetValue SET key=resource:lock rule=0 owner=conn:A value=def acted"),
			do(bulkR("def"), "GET", res),
			pttl(res, 29000, 30000),
			rec(res, "conn:A", 1, "def", 30000),
			// The record follows the value: A still holds the lock.
			as(A, intR(1), "PEXPIRE", res, "60000"),
			fx(as(A, intR(1), "DEL", res), "Released DEL key=resource:lock rule=0 owner=conn:A value=def grant=1 outcome=released valuelen=3"),
			do(intR(0), "EXISTS", res, resRecs),
			do(bulkR("1"), "GET", ctr(res)),
		}},
		sscenario{name: "holder: GETEX", script: rewrite.Holder, protos: both, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", "30000"),
			fx(as(A, bulkR("abc"), "GETEX", res, "PX", "5000"), "Renewed GETEX key=resource:lock rule=0 owner=conn:A acted"),
			pttl(res, 4000, 5000),
			as(A, bulkR("abc"), "GETEX", res, "PERSIST"),
			do(intR(-1), "PTTL", res),
			refused(B, "NOTOWNER", "GETEX", res, "PX", "5000"),
			rec(res, "conn:A", 1, "abc", -1),
			do(intR(-1), "PTTL", resRecs),
			as(A, bulkR("abc"), "GETEX", res, "PX", "30000"),
			pttl(resRecs, keepMS+29000, keepMS+30000),
		}},
		sscenario{name: "holder: the stale holder after a successor changes nothing", script: rewrite.Holder, protos: both, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", shortPX),
			lapse(wait, fx(as(A, nullR, "GETEX", res, "PX", "30000"), "Renewed GETEX key=resource:lock rule=0 owner=conn:A")),
			as(A, intR(0), "PEXPIRE", res, "30000"),
			as(B, okR, "SET", res, "xyz", "NX", "PX", "30000"),
			as(A, intR(0), "PEXPIRE", res, "30000"),
			as(A, intR(0), "PERSIST", res),
			fx(as(A, nullR, "SET", res, "abc", "XX", "GET"), "SetValue SET key=resource:lock rule=0 owner=conn:A value=abc"),
			do(bulkR("xyz"), "GET", res),
			pttl(res, 29000, 30000),
			rec(res, "conn:A", 1, "abc", 20),
		}},
		sscenario{name: "holder: an expiry in the past deletes the lock and its record", script: rewrite.Holder, protos: both, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", "30000"),
			fx(as(A, intR(1), "PEXPIRE", res, "0"), "Renewed PEXPIRE key=resource:lock rule=0 owner=conn:A acted"),
			do(intR(0), "EXISTS", res, resRecs),
			refused(A, "NOTOWNER", "PEXPIRE", res, "100"),
		}},
	)

	// The records hash: it expires when its last record does (lease +
	// keep_lapsed), has no expiry only while a lock without a lease is
	// recorded, and superseded records go once keep_lapsed is over.
	keep := 500 * time.Millisecond
	out = append(out,
		sscenario{name: "records: superseded records are pruned after keep_lapsed", script: rewrite.Acquire, keep: keep, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", shortPX),
			pttl(resRecs, 300, 520),
			lapse(wait, as(B, okR, "SET", res, "xyz", "NX", "PX", "30000")),
			rec(res, "conn:A", 1, "abc", 20),
			pttl(resRecs, 29000, 30500),
			// Past A's lease + keep_lapsed: B's next renewal prunes A's record.
			lapse(600*time.Millisecond, as(B, intR(1), "PEXPIRE", res, "30000")),
			noRec(res, "conn:A"),
			rec(res, "conn:B", 2, "xyz", -2),
			fx(refused(A, "NOTOWNER", "DEL", res), "Refused DEL key=resource:lock rule=0 owner=conn:A"),
			as(B, intR(1), "DEL", res),
			do(intR(0), "EXISTS", resRecs),
		}},
		sscenario{name: "records: a lock without lease taken over a lapsed one; its release leaves nothing without expiry", script: rewrite.Release, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", shortPX),
			lapse(wait, as(B, okR, "SET", res, "xyz", "NX")),
			do(intR(-1), "PTTL", resRecs), // B's lock has no lease
			rec(res, "conn:A", 1, "abc", 20),
			as(B, intR(1), "DEL", res),
			// A's lapsed record is left, for keep_lapsed after its lease.
			rec(res, "conn:A", 1, "abc", 20),
			pttl(resRecs, keepMS-1000, keepMS),
		}},
		sscenario{name: "records: a superseded owner names the lock twice; the holder without lease keeps its record", script: rewrite.Release, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", shortPX),
			lapse(wait, as(B, okR, "SET", res, "xyz", "NX")),
			fx(as(A, intR(0), "DEL", res, res),
				"Released DEL key=resource:lock rule=0 owner=conn:A holder=conn:B value=abc grant=1 outcome=superseded lapsed valuelen=3",
				"Released DEL key=resource:lock rule=0 owner=conn:A holder=conn:B value=abc grant=1 outcome=superseded lapsed valuelen=3"),
			noRec(res, "conn:A"),
			rec(res, "conn:B", 2, "xyz", -1),
			do(intR(-1), "PTTL", resRecs),
			do(bulkR("xyz"), "GET", res),
		}},
		sscenario{name: "records: a forwarded delete of a lock without lease ends its holder's record", script: rewrite.Release, steps: []sstep{
			as(A, okR, "SET", "obs:a", "v", "NX"),
			do(intR(-1), "PTTL", recs("obs:a")),
			as(B, intR(1), "DEL", "obs:a"),
			rec("obs:a", "conn:A", 1, "v", -2),
			pttl(recs("obs:a"), keepMS-1000, keepMS),
			fx(as(A, intR(0), "DEL", "obs:a"), "Released DEL key=obs:a rule=2 owner=conn:A outcome=forwarded held=none"),
		}},
		sscenario{name: "records: a holder's expiry in the past leaves no other record without expiry", script: rewrite.Holder, steps: []sstep{
			as(A, okR, "SET", res, "abc", "NX", "PX", shortPX),
			lapse(wait, as(B, intR(1), "SETNX", res, "xyz")),
			do(intR(-1), "PTTL", resRecs),
			as(B, intR(1), "PEXPIRE", res, "0"),
			noRec(res, "conn:B"),
			rec(res, "conn:A", 1, "abc", 20),
			pttl(resRecs, keepMS-1000, keepMS),
		}},
	)

	// Fenced: every write to a guarded key, checked against the writer's
	// record of the lock guarding it; the seed's readout 33/34/35.
	data := "{r}:data"
	out = append(out,
		sscenario{name: "fenced: seed readout under highest (33 refused, 34 accepted, 35 accepted and highest)", script: rewrite.Fenced, protos: both, steps: []sstep{
			do(okR, "SET", "{r}:fence", "32"),
			as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", shortPX), // A stalls past its lease
			lapse(wait, as(B, okR, "SET", "{r}:flock", "B", "NX", "PX", shortPX)),
			fx(as(B, okR, "SET", data, "by 34"), "FencedWrite SET key={r}:data rule=5 owner=conn:B grant=34"),
			do(bulkR("34"), "HGET", "{r}:fence:high", data),
			fx(as(A, staleHighest(data, 33, 34), "SET", data, "by 33"), "FencedWrite SET key={r}:data rule=5 owner=conn:A"),
			do(bulkR("by 34"), "GET", data),
			do(bulkR("34"), "HGET", "{r}:fence:high", data),
			as(B, okR, "SET", data, "by 34 again"),
			lapse(wait, fx(as(C, okR, "SET", "{r}:flock", "C", "NX", "PX", "30000"), "Grant SET key={r}:flock rule=5 owner=conn:C value=C grant=35")),
			fx(as(C, intR(1), "HSET", "{r}:items:1", "f", "v"), "FencedWrite HSET key={r}:items:1 rule=5 owner=conn:C grant=35"),
			as(C, okR, "SET", data, "by 35"),
			do(bulkR("35"), "HGET", "{r}:fence:high", data),
			as(B, staleHighest(data, 34, 35), "SET", data, "late 34"),
			as(A, staleHighest(data, 33, 35), "SET", data, "late 33"),
			do(bulkR("by 35"), "GET", data),
			do(pairsR(data, "35", "{r}:items:1", "35"), "HGETALL", "{r}:fence:high"),
			// Nobody's write without a record: unfenced_writes: reject.
			fx(sstep{who: ownerC2, args: []string{"SET", data, "x"}, want: errR(`UNFENCED lockproxy refused SET on "{r}:data" (rule 6 "{*}:flock", unfenced_writes: reject): the key is guarded by a lock and this client holds no grant of it; acquire the lock (SET <lock> <token> NX PX <ms>) before writing, or set unfenced_writes: allow`)},
				"Refused SET key={r}:data rule=5 owner=conn:C2"),
			do(bulkR("by 35"), "GET", data),
			// C releases: its writes are unfenced from then on.
			as(C, intR(1), "DEL", "{r}:flock"),
			refused(C, "UNFENCED", "SET", data, "after"),
		}},
		sscenario{name: "fenced: current (the token must be the latest grant); unfenced writes observed", script: rewrite.Fenced, protos: both, steps: []sstep{
			fx(as(C, intR(1), "INCR", "{c}:cdata"), "FencedWrite INCR key={c}:cdata rule=6 owner=conn:C unfenced"),
			do(okR, "SET", "{c}:cfence", "32"),
			as(A, okR, "SET", "{c}:clock", "A", "NX", "PX", shortPX),
			fx(as(A, intR(2), "INCR", "{c}:cdata"), "FencedWrite INCR key={c}:cdata rule=6 owner=conn:A grant=33"),
			lapse(wait, as(B, okR, "SET", "{c}:clock", "B", "NX", "PX", "30000")),
			as(A, staleCurrent("{c}:cdata", 33, 34), "INCR", "{c}:cdata"),
			fx(as(B, intR(3), "INCR", "{c}:cdata"), "FencedWrite INCR key={c}:cdata rule=6 owner=conn:B grant=34"),
			do(intR(0), "EXISTS", "{c}:cfence:high"), // current records nothing
			do(bulkR("3"), "GET", "{c}:cdata"),
		}},
		sscenario{name: "fenced: unfenced_writes: allow lets a writer without a record through, still checks a holder (current)", script: rewrite.Fenced, protos: both, steps: []sstep{
			fx(as(C, okR, "SET", "{a}:adata", "free"), "FencedWrite SET key={a}:adata rule=7 owner=conn:C unfenced"),
			as(A, okR, "SET", "{a}:alock", "A", "NX", "PX", shortPX),
			lapse(wait, as(B, okR, "SET", "{a}:alock", "B", "NX", "PX", "30000")),
			fx(as(B, okR, "SET", "{a}:adata", "by 2"), "FencedWrite SET key={a}:adata rule=7 owner=conn:B grant=2"),
			as(A, staleCurrent("{a}:adata", 1, 2), "SET", "{a}:adata", "by 1"),
			do(bulkR("by 2"), "GET", "{a}:adata"),
		}},
		sscenario{name: "fenced: MSET of two guarded keys", script: rewrite.Fenced, protos: both, steps: []sstep{
			as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"),
			fx(as(A, okR, "MSET", data, "1", "{r}:items:2", "2"),
				"FencedWrite MSET key={r}:data rule=5 owner=conn:A grant=1", "FencedWrite MSET key={r}:items:2 rule=5 owner=conn:A grant=1"),
			do(pairsR(data, "1", "{r}:items:2", "1"), "HGETALL", "{r}:fence:high"),
		}},
		sscenario{name: "fenced: COPY from a lock onto a guarded key is fenced", script: rewrite.Fenced, gap: "copy", steps: []sstep{
			as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"),
			fx(refused(C, "UNFENCED", "COPY", "{r}:flock", data, "REPLACE"), "Refused COPY key={r}:data rule=5 owner=conn:C"),
			do(intR(0), "EXISTS", data),
			fx(as(A, intR(1), "COPY", "{r}:flock", data, "REPLACE"), "FencedWrite COPY key={r}:data rule=5 owner=conn:A grant=1"),
			do(bulkR("A"), "GET", data),
			do(bulkR("1"), "HGET", "{r}:fence:high", data),
		}},
		sscenario{name: "fenced: a failing command leaves the highest unchanged", script: rewrite.Fenced, protos: both, steps: []sstep{
			as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"),
			as(A, okR, "SET", data, "a string"),
			fx(as(A, errR("WRONGTYPE Operation against a key holding the wrong kind of value"), "HSET", data, "f", "v"),
				"FencedWrite HSET key={r}:data rule=5 owner=conn:A"),
			do(bulkR("1"), "HGET", "{r}:fence:high", data),
			do(bulkR("a string"), "GET", data),
			as(A, intR(1), "DEL", data),
			do(intR(0), "EXISTS", data),
		}},
		sscenario{name: "fenced: a nil reply passes through, in either protocol", script: rewrite.Fenced, protos: both, steps: []sstep{
			as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"),
			fx(as(A, nullR, "SET", data, "v", "XX"), "FencedWrite SET key={r}:data rule=5 owner=conn:A grant=1"),
			do(intR(0), "EXISTS", data),
			as(A, nullR, "SET", data, "v", "GET"),
			as(A, bulkR("v"), "SET", data, "w", "GET"),
			do(bulkR("1"), "HGET", "{r}:fence:high", data),
		}},
		sscenario{name: "fenced: an observed lock overwritten together with a guarded key", script: rewrite.Fenced, protos: both, steps: []sstep{
			// The Fenced script's "UNFENCED i" names the i-th check; the
			// refusal must name the guarded key, not the observed lock.
			fx(sstep{who: C, args: []string{"MSET", "obs:a", "1", data, "2"}, want: errR(`UNFENCED lockproxy refused MSET on "{r}:data" (rule 6 "{*}:flock", unfenced_writes: reject): the key is guarded by a lock and this client holds no grant of it; acquire the lock (SET <lock> <token> NX PX <ms>) before writing, or set unfenced_writes: allow`)},
				"Refused MSET key={r}:data rule=5 owner=conn:C", "Kind(0) MSET key=obs:a rule=2 owner=conn:C"),
			as(A, okR, "SET", "{r}:flock", "A", "NX", "PX", "30000"),
			fx(as(A, okR, "MSET", "obs:a", "1", data, "2"),
				"FencedWrite MSET key={r}:data rule=5 owner=conn:A grant=1", "Observed MSET key=obs:a rule=2 owner=conn:A"),
		}},
	)
	return out
}

// ownerC2 is one more owner with no record of anything.
var ownerC2 = &fakeSession{conn: "conn:C2", name: "name:C2", addr: "10.0.0.4"}

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

// scenarioDecider is testConfig's Decider with the scenario's keep_lapsed.
func scenarioDecider(tb testing.TB, sc sscenario) *rewrite.Decider {
	d := testDecider(tb, testConfig, "")
	if sc.keep > 0 {
		d.Keep = rewrite.KeepArg(sc.keep)
	}
	return d
}

// outcome is what one step did on one backend.
type outcome struct {
	client  []byte // what the client sees
	raw     []byte // what the backend answered (the script's reply for a Run plan)
	script  *rewrite.Script
	effects []rewrite.Effect
}

// runStep sends a step to a backend: as it is, or as lockproxy handles
// the client's command (Decide, the plan's script, Fold).
func runStep(t *testing.T, d *rewrite.Decider, st sstep, proto int, send func(args ...string) []byte) outcome {
	t.Helper()
	if st.who == nil {
		r := send(st.args...)
		return outcome{client: r, raw: r}
	}
	p := d.Decide(bs(st.args...), st.who, make([]keyspec.Key, 0, 8))
	switch p.Kind {
	case rewrite.Forward:
		r := send(st.args...)
		return outcome{client: r, raw: r, effects: p.Effects}
	case rewrite.Refuse:
		return outcome{client: resp.AppendError(nil, p.Err), effects: p.Effects}
	case rewrite.Run:
		raw := send(evalArgs(p)...)
		return outcome{client: rewrite.Fold(p.Shape, p.Effects, raw, proto), raw: raw, script: p.Script, effects: p.Effects}
	}
	t.Fatalf("Decide(%q): plan kind %s", st.args, planKinds[p.Kind])
	return outcome{}
}

func effectLines(effects []rewrite.Effect) []string {
	out := []string{}
	for _, e := range effects {
		out = append(out, fmtEffect(e))
	}
	return out
}

// record is an owner record as the scripts write it.
type record struct {
	grant    int64
	acquired int64
	end      int64
	value    string
	ok       bool
}

func parseRecord(reply []byte) (record, bool) {
	text, null := bulkOf(reply)
	if null {
		return record{}, true
	}
	f := strings.SplitN(text, " ", 4)
	if len(f) != 4 {
		return record{}, false
	}
	var r record
	var err [3]error
	r.grant, err[0] = strconv.ParseInt(f[0], 10, 64)
	r.acquired, err[1] = strconv.ParseInt(f[1], 10, 64)
	r.end, err[2] = strconv.ParseInt(f[2], 10, 64)
	if err[0] != nil || err[1] != nil || err[2] != nil {
		return record{}, false
	}
	r.value, r.ok = f[3], true
	return r, true
}

// bulkOf reads a bulk string reply (RESP2 or RESP3 null: null true).
func bulkOf(reply []byte) (string, bool) {
	if string(reply) == "$-1\r\n" || string(reply) == "_\r\n" {
		return "", true
	}
	hdr := bytes.Index(reply, []byte("\r\n"))
	if len(reply) < 4 || reply[0] != '$' || hdr < 0 {
		return "", false
	}
	return string(reply[hdr+2 : len(reply)-2]), false
}

// checkStep checks what one backend did against the step's expectations;
// exact says the clock was the fake one (times are exact, not bounds).
func checkStep(t *testing.T, i int, st sstep, proto int, o outcome, exact bool) {
	t.Helper()
	got := o.client
	switch {
	case st.ttl[1] != 0:
		n, ok := parseInt(got)
		if !ok || n < st.ttl[0] || n > st.ttl[1] {
			t.Errorf("step %d %s: %q, want an integer in [%d, %d]", i, show(st.args), got, st.ttl[0], st.ttl[1])
		}
	case st.rec != nil:
		checkRecord(t, i, st, got, exact)
	case st.code != "":
		if !bytes.HasPrefix(got, []byte("-"+st.code+" lockproxy ")) || bytes.Count(got, []byte("\r\n")) != 1 {
			t.Errorf("step %d %s: %q, want a one-line %s refusal", i, show(st.args), got, st.code)
		}
	case st.want != nil:
		if want := st.want(proto); string(got) != want {
			t.Errorf("step %d %s:\n got %q\nwant %q", i, show(st.args), got, want)
		}
	}
	if st.fx != nil {
		if lines := effectLines(o.effects); !reflect.DeepEqual(lines, st.fx) {
			t.Errorf("step %d %s: effects after Fold\n got %q\nwant %q", i, show(st.args), lines, st.fx)
		}
	}
	if st.held > 0 {
		if len(o.effects) == 0 {
			t.Errorf("step %d %s: no effect to read Held from", i, show(st.args))
		} else if h := o.effects[0].Held; (exact && h != st.held) || h < st.held || h > st.held+5*time.Second {
			t.Errorf("step %d %s: Held %v, want %v", i, show(st.args), h, st.held)
		}
	}
}

func checkRecord(t *testing.T, i int, st sstep, got []byte, exact bool) {
	t.Helper()
	want := st.rec
	r, ok := parseRecord(got)
	switch {
	case !ok:
		t.Errorf("step %d %s: %q is not an owner record", i, show(st.args), got)
	case want.grant == 0 && r.ok:
		t.Errorf("step %d %s: record %q, want none", i, show(st.args), got)
	case want.grant == 0:
	case !r.ok:
		t.Errorf("step %d %s: no record, want grant %d value %q", i, show(st.args), want.grant, want.value)
	case r.grant != want.grant || r.value != want.value:
		t.Errorf("step %d %s: record %q, want grant %d value %q", i, show(st.args), got, want.grant, want.value)
	case want.lease == -1 && r.end != 0:
		t.Errorf("step %d %s: record %q, want lease end 0 (no expiry)", i, show(st.args), got)
	case want.lease >= 0:
		lease := r.end - r.acquired
		if (exact && lease != want.lease) || lease < want.lease-recSlack || lease > want.lease+recSlack {
			t.Errorf("step %d %s: record %q has a lease of %d ms, want %d", i, show(st.args), got, lease, want.lease)
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

// maskHeld blanks the clock-dependent "held ms" of each lock in a
// Release reply (element 3 of each group of 7 after the count), so that
// luaeval's reply and Valkey's, taken on slightly different clocks, can
// be compared byte for byte otherwise.
func maskHeld(raw []byte) []byte {
	if len(raw) == 0 || raw[0] != '*' {
		return raw
	}
	var out []byte
	rest := raw
	for idx := -1; len(rest) > 0; idx++ {
		end := bytes.Index(rest, []byte("\r\n")) + 2
		if end < 2 {
			return raw
		}
		el := rest[:end]
		if rest[0] == '$' {
			n, err := strconv.Atoi(string(rest[1 : end-2]))
			if err != nil {
				return raw
			}
			if n >= 0 {
				end += n + 2
				if end > len(rest) {
					return raw
				}
				el = rest[:end]
			}
		}
		if idx >= 1 && (idx-1)%7 == 2 && el[0] == ':' {
			el = []byte(":<held>\r\n")
		}
		out = append(out, el...)
		rest = rest[end:]
	}
	return out
}

// TestScriptsOffline runs every scenario on luaeval with a frozen clock:
// no server, no sleeping.
func TestScriptsOffline(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	for _, sc := range scriptScenarios(now) {
		for _, proto := range protosOf(sc) {
			t.Run(fmt.Sprintf("%s/resp%d", sc.name, proto), func(t *testing.T) {
				d := scenarioDecider(t, sc)
				st := luaeval.New()
				st.SetTime(now)
				send := func(args ...string) []byte { return st.DoProto(proto, args...) }
				for i, s := range sc.steps {
					if s.lapse > 0 {
						st.Advance(s.lapse)
					}
					o := runStep(t, d, s, proto, send)
					if gapHit(sc, o.raw) {
						t.Skipf("step %d needs %s, which luaeval does not implement", i, strings.ToUpper(sc.gap))
					}
					checkStep(t, i, s, proto, o, true)
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
// bytes on both (the client's after Fold, and the script's own, but for
// the clock-dependent fields), the effects Fold fills the same, and the
// expected ones.
func TestScriptsValkey(t *testing.T) {
	srv := valkeytest.Start(t)
	conns := map[int]*rawConn{2: dialRaw(t, srv.Addr, 2), 3: dialRaw(t, srv.Addr, 3)}
	now := time.Now()
	for _, sc := range scriptScenarios(now) {
		for _, proto := range protosOf(sc) {
			t.Run(fmt.Sprintf("%s/resp%d", sc.name, proto), func(t *testing.T) {
				d := scenarioDecider(t, sc)
				rc := conns[proto]
				rc.Do(t, "FLUSHALL")
				rc.Do(t, "SCRIPT", "FLUSH")
				st := luaeval.New()
				real := func(args ...string) []byte { return rc.Do(t, args...) }
				off := func(args ...string) []byte { return st.DoProto(proto, args...) }
				diverged := false
				start := time.Now()
				for i, s := range sc.steps {
					if s.lapse > 0 {
						time.Sleep(s.lapse)
					}
					r := runStep(t, d, s, proto, real)
					o := runStep(t, d, s, proto, off)
					checkStep(t, i, s, proto, r, false)
					if diverged = diverged || gapHit(sc, o.raw); diverged {
						continue // luaeval could not run it: its keyspace differs from here on
					}
					// The two backends run one after the other on the wall
					// clock: their times may be as far apart as the
					// scenario has taken so far (a loaded machine once put
					// 270 ms between them).
					compareBackends(t, i, s, r, o, time.Since(start).Milliseconds())
				}
			})
		}
	}
}

// compareBackends: Valkey (r) and luaeval (o) did the same; their times
// within slack plus elapsed, the ms the scenario has run so far.
func compareBackends(t *testing.T, i int, s sstep, r, o outcome, elapsed int64) {
	t.Helper()
	switch {
	case s.ttl[1] != 0:
		a, ok1 := parseInt(r.client)
		b, ok2 := parseInt(o.client)
		if !ok1 || !ok2 || abs(a-b) > 100+elapsed {
			t.Errorf("step %d %s: valkey %q, luaeval %q", i, show(s.args), r.client, o.client)
		}
		return
	case s.rec != nil:
		a, ok1 := parseRecord(r.client)
		b, ok2 := parseRecord(o.client)
		if !ok1 || !ok2 || a.ok != b.ok || a.grant != b.grant || a.value != b.value || (a.end == 0) != (b.end == 0) ||
			abs(a.acquired-b.acquired) > recSlack+elapsed || abs(a.end-b.end) > recSlack+elapsed {
			t.Errorf("step %d %s: records differ\n valkey  %q\n luaeval %q", i, show(s.args), r.client, o.client)
		}
		return
	}
	if !bytes.Equal(r.client, o.client) {
		t.Errorf("step %d %s: client replies differ\n valkey  %q\n luaeval %q", i, show(s.args), r.client, o.client)
	}
	rr, or := r.raw, o.raw
	if r.script == rewrite.Release {
		rr, or = maskHeld(rr), maskHeld(or)
	}
	if !bytes.Equal(rr, or) {
		t.Errorf("step %d %s: script replies differ\n valkey  %q\n luaeval %q", i, show(s.args), rr, or)
	}
	if a, b := effectLines(r.effects), effectLines(o.effects); !reflect.DeepEqual(a, b) {
		t.Errorf("step %d %s: effects differ\n valkey  %q\n luaeval %q", i, show(s.args), a, b)
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// TestScriptsCovered: every script lockproxy sends has scenarios.
func TestScriptsCovered(t *testing.T) {
	seen := map[*rewrite.Script]int{}
	for _, sc := range scriptScenarios(time.Now()) {
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
	d := testDecider(t, testConfig, "")
	args := evalArgs(d.Decide(bs("SET", "res:lock", "abc", "NX", "PX", "30000"), ownerA, nil))
	args[0], args[1] = "EVALSHA", rewrite.Acquire.SHA
	if got := rc.Do(t, args...); string(got) != "*2\r\n:1\r\n+OK\r\n" {
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

// answerSetup: alice holds resource:lock (abc, grant 7) and {r}:flock
// (tok, token 35), acquired through their plans, so that Valkey holds her
// owner records.
var answerSetup = [][]string{
	{"SET", "{resource:lock}:lockproxy:grants", "6"},
	{"SET", "{r}:fence", "34"},
}

var answerAcquire = [][]string{
	{"SET", "resource:lock", "abc", "NX", "PX", "30000"},
	{"SET", "{r}:flock", "tok", "NX", "PX", "30000"},
}

var answerAlice = &fakeSession{conn: "conn:alice", name: "name:app", addr: "10.0.0.1"}

// runAnswerCases compares, on a real server, the command sent as is with
// its plan's script sent instead, under RESP2 and RESP3.
func runAnswerCases(t *testing.T, cases []answerCase) {
	srv := valkeytest.Start(t)
	d := testDecider(t, testConfig, "")
	for _, proto := range []int{2, 3} {
		s := &fakeSession{conn: answerAlice.conn, name: answerAlice.name, addr: answerAlice.addr, proto: proto}
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
				func() []byte {
					effects := append([]rewrite.Effect(nil), p.Effects...)
					return rewrite.Fold(p.Shape, effects, rc.Do(t, evalArgs(p)...), proto)
				},
			} {
				rc.Do(t, "FLUSHALL")
				for _, a := range answerSetup {
					rc.Do(t, a...)
				}
				for _, a := range answerAcquire {
					if r := rc.Do(t, evalArgs(d.Decide(bs(a...), s, nil))...); string(r) != "*2\r\n:"+map[string]string{"resource:lock": "7", "{r}:flock": "35"}[a[1]]+"\r\n+OK\r\n" {
						t.Fatalf("setup %q: %q", a, r)
					}
				}
				for _, a := range c.setup {
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
		{"NX", "GET", "PX", "30000"}, {"GET", "nx"},
	} {
		args := append([]string{"SET", "resource:lock", "new"}, opts...)
		cases = append(cases,
			answerCase{args: args, setup: free, check: lockState}, // acquired
			answerCase{args: args, check: lockState},              // contention
		)
	}
	cases = append(cases,
		answerCase{args: []string{"SETNX", "resource:lock", "new"}, setup: free, check: lockState},
		answerCase{args: []string{"SETNX", "resource:lock", "new"}, check: lockState},
		answerCase{args: []string{"SET", "resource:lock", "new", "NX", "GET"}, setup: [][]string{{"HSET", "resource:lock", "f", "v"}}, check: lockState},
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
