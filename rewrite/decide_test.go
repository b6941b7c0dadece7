package rewrite_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// testConfig has one rule per behaviour under test. Rule indices (0-based,
// as Effect.Rule.Index) are noted; errors name them 1-based.
const testConfig = `
on_flush: reject
locks:
  - pattern: "*:lock"          # 0: rewrite, connection, unknown owners refused
  - pattern: "rej:*"           # 1
    release: reject
  - pattern: "obs:*"           # 2
    release: observe
  - pattern: "fwd:*"           # 3
    unknown_owner: forward
  - pattern: "named:*"         # 4
    session: client_name
  - pattern: "{*}:flock"       # 5: Kleppmann's fence
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data", "{base}:items:*"]
      check: highest
      unfenced_writes: reject
  - pattern: "{*}:clock"       # 6: EchoMQ's fence
    fence:
      counter: "{base}:cfence"
      guards: ["{base}:cdata"]
      check: current
      unfenced_writes: observe
  - pattern: "{*}:alock"       # 7
    fence:
      counter: "{base}:afence"
      guards: ["{base}:adata"]
      unfenced_writes: allow
`

// testDecider builds the Decider of testConfig with the golden command
// table; onFlush overrides the file's on_flush when not empty.
func testDecider(tb testing.TB, config string, onFlush policy.FlushPolicy) *rewrite.Decider {
	tb.Helper()
	cfg, err := policy.Parse("test.yaml", []byte(config))
	if err != nil {
		tb.Fatalf("config: %v", err)
	}
	rules, err := policy.NewRules(cfg.Locks)
	if err != nil {
		tb.Fatalf("rules: %v", err)
	}
	d := &rewrite.Decider{Table: goldenTable(tb), Rules: rules, OnFlush: cfg.OnFlush}
	if onFlush != "" {
		d.OnFlush = onFlush
	}
	return d
}

// The grant table every decision test sees. alice holds most locks through
// her connection; bob holds others; "name:app" holds a client_name lock.
func testWorld() world {
	return world{
		"conn:alice": {
			"resource:lock": {value: "abc", number: 7},
			"{user:1}:lock": {value: "1", number: 3},
			"rej:a":         {value: "t", number: 2},
			"fwd:a":         {value: "t", number: 4},
			"{r}:flock":     {value: "tok", number: 35},
			"{c}:clock":     {value: "tok", number: 12},
		},
		"conn:bob": {
			"obs:a":      {value: "b", number: 5},
			"other:lock": {value: "xyz", number: 9},
			"stale:lock": {value: "old", number: 1, lapsed: true},
		},
		"name:app": {
			"named:a": {value: "n", number: 11},
		},
	}
}

func sessions(w world) (alice, bob, carol *fakeSession) {
	alice = &fakeSession{conn: "conn:alice", name: "name:app", addr: "10.0.0.1", w: w}
	bob = &fakeSession{conn: "conn:bob", name: "name:other", addr: "10.0.0.2", w: w}
	// carol is another connection of alice's application (same client name).
	carol = &fakeSession{conn: "conn:carol", name: "name:app", addr: "10.0.0.1", w: w}
	return alice, bob, carol
}

type decideCase struct {
	name    string
	who     string // alice (default), bob or carol
	flush   policy.FlushPolicy
	args    []string
	kind    rewrite.Kind
	script  *rewrite.Script
	keys    []string
	sargs   []string
	shape   rewrite.Shape
	err     string // the whole error text, when the case pins it
	code    string // the error's code word (Refuse only)
	effects []string
}

// Counter keys of the default template.
const (
	resCtr  = "{resource:lock}:lockproxy:grants"
	userCtr = "{user:1}:lock:lockproxy:grants"
)

func decideCases() []decideCase {
	w := strings.Fields
	run := func(s *rewrite.Script, keys, args []string, effects ...string) decideCase {
		return decideCase{kind: rewrite.Run, script: s, keys: keys, sargs: args, effects: effects}
	}
	acquire := func(keys, args []string, effects ...string) decideCase {
		c := run(rewrite.Acquire, keys, args, effects...)
		c.shape = rewrite.AcquireReply
		return c
	}
	refuse := func(code string, effects ...string) decideCase {
		return decideCase{kind: rewrite.Refuse, code: code, effects: effects}
	}
	forward := func(effects ...string) decideCase { return decideCase{kind: rewrite.Forward, effects: effects} }
	named := func(c decideCase, name, who string, args ...string) decideCase {
		c.name, c.who, c.args = name, who, args
		return c
	}
	with := func(c decideCase, f func(*decideCase)) decideCase { f(&c); return c }

	return []decideCase{
		// Keys no rule matches are never touched.
		named(forward(), "GET plain", "", "GET", "plain"),
		named(forward(), "SET plain", "", "SET", "plain", "v"),
		named(forward(), "SET plain NX", "", "SET", "plain", "v", "NX", "PX", "100"),
		named(forward(), "DEL plain keys", "", "DEL", "p1", "p2"),
		named(forward(), "EXPIRE plain", "", "EXPIRE", "p1", "10"),
		named(forward(), "PING", "", "PING"),
		named(forward(), "unknown command", "", "NOSUCHCMD", "resource:lock"),
		named(forward(), "arity error", "", "SET", "resource:lock"),

		// Reads of a lock are left alone.
		named(forward(), "GET lock", "bob", "GET", "resource:lock"),
		named(forward(), "EXISTS lock", "bob", "EXISTS", "resource:lock", "other:lock"),
		named(forward(), "PTTL lock", "bob", "PTTL", "resource:lock"),
		named(forward(), "OBJECT ENCODING lock", "bob", "OBJECT", "ENCODING", "resource:lock"),
		named(forward(), "COPY from a lock reads it", "bob", "COPY", "resource:lock", "plain"),
		named(forward(), "GETEX without options is a read", "bob", "GETEX", "resource:lock"),

		// Acquisition: SET NX in any case and option order.
		named(acquire(w("resource:lock "+resCtr), w("abc NX PX 30000"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc lease=30s"),
			"SET NX PX", "", "SET", "resource:lock", "abc", "NX", "PX", "30000"),
		named(acquire(w("resource:lock "+resCtr), w("xyz px 30000 nx"),
			"Grant SET key=resource:lock rule=0 owner=conn:bob value=xyz lease=30s"),
			"set px nx, another owner (contention is Valkey's answer)", "bob", "set", "resource:lock", "xyz", "px", "30000", "nx"),
		named(acquire(w("resource:lock "+resCtr), w("abc Ex 30 nX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc lease=30s"),
			"SET EX NX mixed case", "", "SET", "resource:lock", "abc", "Ex", "30", "nX"),
		named(acquire(w("resource:lock "+resCtr), w("abc NX PXAT 1700000000123"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc at=1700000000123"),
			"SET NX PXAT", "", "SET", "resource:lock", "abc", "NX", "PXAT", "1700000000123"),
		named(acquire(w("resource:lock "+resCtr), w("abc EXAT 1700000000 NX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc at=1700000000000"),
			"SET EXAT NX", "", "SET", "resource:lock", "abc", "EXAT", "1700000000", "NX"),
		named(acquire(w("resource:lock "+resCtr), w("abc KEEPTTL NX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET KEEPTTL NX", "", "SET", "resource:lock", "abc", "KEEPTTL", "NX"),
		named(acquire(w("resource:lock "+resCtr), w("abc NX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET NX without lease", "", "SET", "resource:lock", "abc", "NX"),
		named(acquire(w("{user:1}:lock "+userCtr), w("1 NX PX 100"),
			"Grant SET key={user:1}:lock rule=0 owner=conn:alice value=1 lease=100ms"),
			"hash tag kept in the counter", "", "SET", "{user:1}:lock", "1", "NX", "PX", "100"),
		named(acquire(w("a}b:lock a}b:lock:lockproxy:grants"), w("v NX"),
			"Grant SET key=a}b:lock rule=0 owner=conn:alice value=v"),
			"key that cannot be wrapped in a tag", "", "SET", "a}b:lock", "v", "NX"),
		named(acquire(w("{r}:flock {r}:fence"), w("tok NX PX 100"),
			"Grant SET key={r}:flock rule=5 owner=conn:alice value=tok lease=100ms"),
			"fence counter template", "", "SET", "{r}:flock", "tok", "NX", "PX", "100"),
		named(acquire(w("named:a {named:a}:lockproxy:grants"), w("n NX"),
			"Grant SET key=named:a rule=4 owner=name:app value=n"),
			"client_name owner", "carol", "SET", "named:a", "n", "NX"),
		named(forward(), "SET NX GET is not an acquisition", "", "SET", "resource:lock", "abc", "NX", "GET"),
		named(forward(), "SET NX XX: Valkey answers the syntax error", "", "SET", "resource:lock", "abc", "NX", "XX"),
		named(forward(), "SET NX PX 0: Valkey answers", "", "SET", "resource:lock", "abc", "NX", "PX", "0"),
		named(forward(), "SET NX PX not a number", "", "SET", "resource:lock", "abc", "NX", "PX", "soon"),
		named(forward(), "SET NX EX PX", "", "SET", "resource:lock", "abc", "NX", "EX", "1", "PX", "1"),
		named(forward(), "SET NX unknown option", "", "SET", "resource:lock", "abc", "NX", "BOGUS"),

		// Release by the holder: token-checked.
		named(run(rewrite.Release, w("resource:lock "+resCtr), w("DEL 0 abc 7"),
			"Released DEL key=resource:lock rule=0 owner=conn:alice value=abc grant=7"),
			"DEL by holder", "", "DEL", "resource:lock"),
		named(run(rewrite.Release, w("resource:lock "+resCtr), w("UNLINK 0 abc 7"),
			"Released UNLINK key=resource:lock rule=0 owner=conn:alice value=abc grant=7"),
			"unlink by holder", "", "unlink", "resource:lock"),
		named(run(rewrite.Release, w("{r}:flock {r}:fence"), w("DEL 0 tok 35"),
			"Released DEL key={r}:flock rule=5 owner=conn:alice value=tok grant=35"),
			"DEL of a fenced lock checks the fence counter", "", "DEL", "{r}:flock"),
		named(run(rewrite.Release, w("named:a {named:a}:lockproxy:grants"), w("DEL 0 n 11"),
			"Released DEL key=named:a rule=4 owner=name:app value=n grant=11"),
			"DEL by a sibling connection under client_name", "carol", "DEL", "named:a"),

		// Release by anyone else.
		named(with(refuse("NOTOWNER", "Refused DEL key=resource:lock rule=0 owner=conn:bob holder=conn:alice"), func(c *decideCase) {
			c.err = `NOTOWNER lockproxy refused DEL of lock key "resource:lock" (rule 1 "*:lock"): this connection acquired no lock on it through lockproxy, so it may be another client's lock; release with the token you acquired it with: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`
		}), "DEL by non-holder", "bob", "DEL", "resource:lock"),
		named(refuse("NOTOWNER", "Refused DEL key=a\r\nb:lock rule=0 owner=conn:bob"),
			"a key with CR LF is quoted in the error", "bob", "DEL", "a\r\nb:lock"),
		named(refuse("NOTOWNER", "Refused UNLINK key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"UNLINK by non-holder", "bob", "UNLINK", "resource:lock"),
		named(refuse("NOTOWNER", "Refused DEL key=stale:lock rule=0 owner=conn:alice"),
			"DEL of a lock whose holder's lease is over: still not yours", "", "DEL", "stale:lock"),
		named(refuse("NOTOWNER", "Refused DEL key=resource:lock rule=0 owner=conn:carol holder=conn:alice"),
			"sibling pooled connection under session: connection", "carol", "DEL", "resource:lock"),
		named(refuse("NOTOWNER", "Refused DEL key=named:a rule=4 owner=name:other holder=name:app"),
			"other client name under client_name", "bob", "DEL", "named:a"),
		named(with(refuse("TOKENRELEASE", "Refused DEL key=rej:a rule=1 owner=conn:alice"), func(c *decideCase) {
			c.err = `TOKENRELEASE lockproxy refused the blind DEL of lock key "rej:a" (rule 2 "rej:*", release: reject): a blind delete can remove a successor's lock after your lease ran out; release with your token: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`
		}), "release: reject, holder", "", "DEL", "rej:a"),
		named(refuse("NOTOWNER", "Refused DEL key=rej:a rule=1 owner=conn:bob holder=conn:alice"),
			"release: reject, non-holder", "bob", "DEL", "rej:a"),
		named(forward("Observed DEL key=obs:a rule=2 owner=conn:bob"),
			"release: observe, holder", "bob", "DEL", "obs:a"),
		named(forward("Observed DEL key=obs:a rule=2 owner=conn:alice holder=conn:bob"),
			"release: observe, non-holder (successor deletion when it deletes)", "", "DEL", "obs:a"),
		named(forward("Observed DEL key=fwd:a rule=3 owner=conn:bob holder=conn:alice"),
			"unknown_owner: forward, non-holder", "bob", "DEL", "fwd:a"),
		named(run(rewrite.Release, w("fwd:a {fwd:a}:lockproxy:grants"), w("DEL 0 t 4"),
			"Released DEL key=fwd:a rule=3 owner=conn:alice value=t grant=4"),
			"unknown_owner: forward, holder still token-checked", "", "DEL", "fwd:a"),

		// Multi-key DEL: plain keys as asked, locks by their rule, one sum.
		named(run(rewrite.Release,
			w("p1 p2 resource:lock "+resCtr+" {user:1}:lock "+userCtr), w("DEL 2 abc 7 1 3"),
			"Released DEL key=resource:lock rule=0 owner=conn:alice value=abc grant=7 plain=2",
			"Released DEL key={user:1}:lock rule=0 owner=conn:alice value=1 grant=3 plain=2"),
			"multi-key DEL mixed", "", "DEL", "p1", "resource:lock", "p2", "{user:1}:lock"),
		named(run(rewrite.Release, w("p1 obs:a resource:lock "+resCtr), w("UNLINK 2 abc 7"),
			"Observed UNLINK key=obs:a rule=2 owner=conn:alice holder=conn:bob plain=1",
			"Released UNLINK key=resource:lock rule=0 owner=conn:alice value=abc grant=7 plain=1"),
			"multi-key UNLINK with an observed lock", "", "UNLINK", "p1", "obs:a", "resource:lock"),
		named(refuse("NOTOWNER", "Refused DEL key=other:lock rule=0 owner=conn:alice holder=conn:bob"),
			"multi-key DEL refused whole when one lock is not the caller's", "", "DEL", "p1", "resource:lock", "other:lock"),

		// Lease renewal.
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 0 PEXPIRE 30000"),
			"Renewed PEXPIRE key=resource:lock rule=0 owner=conn:alice grant=7"),
			"PEXPIRE by holder", "", "PEXPIRE", "resource:lock", "30000"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 0 EXPIRE 30 GT"),
			"Renewed EXPIRE key=resource:lock rule=0 owner=conn:alice grant=7"),
			"expire GT by holder", "", "expire", "resource:lock", "30", "GT"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 0 PEXPIREAT 1700000000000"),
			"Renewed PEXPIREAT key=resource:lock rule=0 owner=conn:alice grant=7"),
			"PEXPIREAT by holder", "", "PEXPIREAT", "resource:lock", "1700000000000"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 0 EXPIREAT 1700000000"),
			"Renewed EXPIREAT key=resource:lock rule=0 owner=conn:alice grant=7"),
			"EXPIREAT by holder", "", "EXPIREAT", "resource:lock", "1700000000"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 0 PERSIST"),
			"Renewed PERSIST key=resource:lock rule=0 owner=conn:alice grant=7"),
			"PERSIST by holder", "", "PERSIST", "resource:lock"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 nil GETEX PX 100"),
			"Renewed GETEX key=resource:lock rule=0 owner=conn:alice grant=7"),
			"GETEX PX by holder", "", "GETEX", "resource:lock", "PX", "100"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 nil SET abc XX PX 30000"),
			"SetValue SET key=resource:lock rule=0 owner=conn:alice value=abc grant=7 lease=30s"),
			"SET XX by holder", "", "SET", "resource:lock", "abc", "XX", "PX", "30000"),
		named(run(rewrite.Guarded, w("resource:lock "+resCtr), w("abc 7 nil SET def KEEPTTL"),
			"SetValue SET key=resource:lock rule=0 owner=conn:alice value=def grant=7"),
			"SET by holder changes its own value", "", "SET", "resource:lock", "def", "KEEPTTL"),
		named(run(rewrite.Guarded, w("rej:a {rej:a}:lockproxy:grants"), w("t 2 0 PEXPIRE 100"),
			"Renewed PEXPIRE key=rej:a rule=1 owner=conn:alice grant=2"),
			"renewal under release: reject", "", "PEXPIRE", "rej:a", "100"),
		named(with(refuse("NOTOWNER", "Refused PEXPIRE key=resource:lock rule=0 owner=conn:bob holder=conn:alice"), func(c *decideCase) {
			c.err = `NOTOWNER lockproxy refused PEXPIRE of lock key "resource:lock" (rule 1 "*:lock"): only the client that acquired the lock through lockproxy may change its lease; acquire it with SET key token NX PX ms first`
		}), "PEXPIRE by stranger", "bob", "PEXPIRE", "resource:lock", "30000"),
		named(refuse("NOTOWNER", "Refused PERSIST key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"PERSIST by stranger", "bob", "PERSIST", "resource:lock"),
		named(refuse("NOTOWNER", "Refused GETEX key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"GETEX PERSIST by stranger", "bob", "GETEX", "resource:lock", "PERSIST"),
		named(refuse("LOCKED", "Refused SET key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"SET XX by stranger", "bob", "SET", "resource:lock", "xyz", "XX", "PX", "30000"),
		named(forward("Observed PEXPIRE key=obs:a rule=2 owner=conn:alice holder=conn:bob"),
			"renewal by stranger under observe", "", "PEXPIRE", "obs:a", "100"),

		// Overwrites and removals of a lock: refused with LOCKED.
		named(refuse("LOCKED", "Refused SET key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"SET overwrite", "bob", "SET", "resource:lock", "x"),
		named(with(refuse("LOCKED", "Refused GETSET key=resource:lock rule=0 owner=conn:alice"), func(c *decideCase) {
			c.err = `LOCKED lockproxy refused GETSET on lock key "resource:lock" (rule 1 "*:lock"): it would overwrite or remove a lock that another client may hold; acquire with SET key token NX PX ms and release with your token: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`
		}), "GETSET, even by the holder", "", "GETSET", "resource:lock", "x"),
		named(refuse("LOCKED", "Refused GETDEL key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"GETDEL", "bob", "GETDEL", "resource:lock"),
		named(refuse("LOCKED", "Refused RENAME key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"RENAME from a lock", "bob", "RENAME", "resource:lock", "plain"),
		named(refuse("LOCKED", "Refused RENAME key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"RENAME onto a lock", "bob", "RENAME", "plain", "resource:lock"),
		named(refuse("LOCKED", "Refused RENAMENX key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"RENAMENX onto a lock", "bob", "RENAMENX", "plain", "resource:lock"),
		named(refuse("LOCKED", "Refused MOVE key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"MOVE", "bob", "MOVE", "resource:lock", "1"),
		named(refuse("LOCKED", "Refused COPY key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"COPY REPLACE onto a lock", "bob", "COPY", "plain", "resource:lock", "REPLACE"),
		named(refuse("LOCKED", "Refused RESTORE key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"RESTORE REPLACE", "bob", "RESTORE", "resource:lock", "0", "payload", "REPLACE"),
		named(refuse("LOCKED", "Refused APPEND key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"APPEND", "bob", "APPEND", "resource:lock", "x"),
		named(refuse("LOCKED", "Refused SETRANGE key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"SETRANGE", "bob", "SETRANGE", "resource:lock", "0", "x"),
		named(refuse("LOCKED", "Refused INCR key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"INCR", "bob", "INCR", "resource:lock"),
		named(refuse("LOCKED", "Refused MSET key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"MSET", "bob", "MSET", "a", "1", "resource:lock", "2"),
		named(refuse("LOCKED", "Refused MSET key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"MSET with an observed lock first: the refusal alone", "bob", "MSET", "obs:a", "1", "resource:lock", "2"),
		named(refuse("LOCKED", "Refused SUNIONSTORE key=resource:lock rule=0 owner=conn:bob holder=conn:alice"),
			"*STORE onto a lock", "bob", "SUNIONSTORE", "resource:lock", "s1", "s2"),
		// SETNX is the acquisition of old clients: the same script as
		// SET ... NX (no lease), answering :1 or :0.
		named(with(run(rewrite.Acquire, w("resource:lock "+resCtr), w("x NX"),
			"Grant SETNX key=resource:lock rule=0 owner=conn:bob value=x"),
			func(c *decideCase) { c.shape = rewrite.SetNXReply }),
			"SETNX (legacy acquisition)", "bob", "SETNX", "resource:lock", "x"),
		named(forward("Observed GETSET key=obs:a rule=2 owner=conn:alice holder=conn:bob"),
			"overwrite under observe", "", "GETSET", "obs:a", "x"),

		// FLUSHALL / FLUSHDB.
		named(with(refuse("LOCKED", "Refused FLUSHALL"), func(c *decideCase) {
			c.err = "LOCKED lockproxy refused FLUSHALL: it would delete every lock without checking who holds it (on_flush: reject); delete keys by name, or set on_flush: allow in the lockproxy config"
		}), "FLUSHALL under on_flush: reject", "", "FLUSHALL"),
		named(refuse("LOCKED", "Refused FLUSHDB"), "flushdb async under on_flush: reject", "", "flushdb", "async"),
		named(with(forward("Flushed FLUSHALL"), func(c *decideCase) { c.flush = policy.FlushAllow }),
			"FLUSHALL under on_flush: allow", "", "FLUSHALL"),
		named(with(forward("Flushed FLUSHDB"), func(c *decideCase) { c.flush = policy.FlushAllow }),
			"FLUSHDB SYNC under on_flush: allow", "", "FLUSHDB", "SYNC"),

		// Fencing: writes to guarded keys.
		named(run(rewrite.Fenced, w("{r}:fence {r}:fence:high {r}:data"), w("1 35 highest {r}:data SET {r}:data v"),
			"FencedWrite SET key={r}:data rule=5 owner=conn:alice value={r}:flock grant=35"),
			"fenced SET by holder (highest)", "", "SET", "{r}:data", "v"),
		named(run(rewrite.Fenced, w("{r}:fence {r}:fence:high {r}:items:1"), w("1 35 highest {r}:items:1 hset {r}:items:1 f v"),
			"FencedWrite HSET key={r}:items:1 rule=5 owner=conn:alice value={r}:flock grant=35"),
			"fenced hset, glob guard", "", "hset", "{r}:items:1", "f", "v"),
		named(run(rewrite.Fenced, w("{r}:fence {r}:fence:high {r}:data"), w("1 35 highest {r}:data DEL {r}:data"),
			"FencedWrite DEL key={r}:data rule=5 owner=conn:alice value={r}:flock grant=35"),
			"fenced DEL of a guarded key", "", "DEL", "{r}:data"),
		named(run(rewrite.Fenced,
			w("{r}:fence {r}:fence:high {r}:fence {r}:fence:high {r}:data {r}:items:2"),
			w("2 35 highest {r}:data 35 highest {r}:items:2 MSET {r}:data 1 {r}:items:2 2"),
			"FencedWrite MSET key={r}:data rule=5 owner=conn:alice value={r}:flock grant=35",
			"FencedWrite MSET key={r}:items:2 rule=5 owner=conn:alice value={r}:flock grant=35"),
			"fenced MSET, two checks", "", "MSET", "{r}:data", "1", "{r}:items:2", "2"),
		named(run(rewrite.Fenced, w("{c}:cfence {c}:cfence:high {c}:cdata"), w("1 12 current {c}:cdata INCR {c}:cdata"),
			"FencedWrite INCR key={c}:cdata rule=6 owner=conn:alice value={c}:clock grant=12"),
			"fenced INCR by holder (current)", "", "INCR", "{c}:cdata"),
		named(with(refuse("UNFENCED", "Refused SET key={r}:data rule=5 owner=conn:bob"), func(c *decideCase) {
			c.err = `UNFENCED lockproxy refused SET on "{r}:data" (rule 6 "{*}:flock", unfenced_writes: reject): the key is guarded by a lock and this client holds no grant of it; acquire the lock (SET <lock> <token> NX PX <ms>) before writing, or set unfenced_writes: allow`
		}), "unfenced write refused", "bob", "SET", "{r}:data", "v"),
		named(refuse("UNFENCED", "Refused SET key={s}:data rule=5 owner=conn:alice"),
			"grant of another lock does not fence this key", "", "SET", "{s}:data", "v"),
		named(refuse("UNFENCED", "Refused MSET key={s}:data rule=5 owner=conn:alice"),
			"one unfenced key refuses the whole write", "", "MSET", "{r}:data", "1", "{s}:data", "2"),
		named(forward("Unfenced SET key={c}:cdata rule=6 owner=conn:bob"),
			"unfenced write observed", "bob", "SET", "{c}:cdata", "v"),
		named(forward(), "unfenced write allowed", "bob", "SET", "{a}:adata", "v"),
		named(forward(), "read of a guarded key (stranger)", "bob", "GET", "{r}:data"),
		named(forward(), "read of a guarded key (holder)", "", "HGETALL", "{r}:items:1"),
		named(forward(), "MGET of guarded keys", "bob", "MGET", "{r}:data", "{r}:items:1"),
		named(forward(), "write to an unguarded key next to the lock", "bob", "SET", "{r}:other", "v"),

		// Commands whose keys only the server can tell.
		named(decideCase{kind: rewrite.NeedKeys}, "SORT ... STORE asks for its keys", "", "SORT", "plain", "STORE", "resource:lock"),
	}
}

func TestDecide(t *testing.T) {
	d := testDecider(t, testConfig, "")
	dAllow := testDecider(t, testConfig, policy.FlushAllow)
	for _, c := range decideCases() {
		t.Run(c.name, func(t *testing.T) {
			alice, bob, carol := sessions(testWorld())
			s := map[string]*fakeSession{"": alice, "alice": alice, "bob": bob, "carol": carol}[c.who]
			dd := d
			if c.flush == policy.FlushAllow {
				dd = dAllow
			}
			args := bs(c.args...)
			p := dd.Decide(args, s, make([]keyspec.Key, 0, 8))
			checkPlan(t, p, c)
			// Effects own their bytes: the proxy reuses the read buffer.
			before := make([]string, len(p.Effects))
			for i, e := range p.Effects {
				before[i] = fmtEffect(e)
			}
			for _, a := range args {
				for i := range a {
					a[i] = '#'
				}
			}
			for i, e := range p.Effects {
				if got := fmtEffect(e); got != before[i] {
					t.Errorf("effect %d aliases the command's arguments: %s became %s", i, before[i], got)
				}
			}
		})
	}
}

func checkPlan(t *testing.T, p rewrite.Plan, c decideCase) {
	t.Helper()
	if p.Kind != c.kind {
		t.Errorf("%q: kind %s, want %s (plan %+v)", c.args, planKinds[p.Kind], planKinds[c.kind], p)
		return
	}
	if p.Script != c.script {
		t.Errorf("script %v, want %v", scriptName(p.Script), scriptName(c.script))
	}
	if got := strs(p.Keys); !reflect.DeepEqual(got, c.keys) {
		t.Errorf("keys\n got %q\nwant %q", got, c.keys)
	}
	if got := strs(p.Args); !reflect.DeepEqual(got, c.sargs) {
		t.Errorf("args\n got %q\nwant %q", got, c.sargs)
	}
	if p.Shape != c.shape {
		t.Errorf("shape %d, want %d", p.Shape, c.shape)
	}
	var effects []string
	for _, e := range p.Effects {
		effects = append(effects, fmtEffect(e))
	}
	if !reflect.DeepEqual(effects, c.effects) {
		t.Errorf("effects\n got %q\nwant %q", effects, c.effects)
	}
	if p.Kind != rewrite.Refuse {
		if p.Err != "" {
			t.Errorf("Err %q on a %s plan", p.Err, planKinds[p.Kind])
		}
		return
	}
	checkRefusal(t, p)
	if c.err != "" && p.Err != c.err {
		t.Errorf("error\n got %s\nwant %s", p.Err, c.err)
	}
	if code, _, _ := strings.Cut(p.Err, " "); code != c.code {
		t.Errorf("error code %q, want %q (%s)", code, c.code, p.Err)
	}
}

// checkRefusal checks what every refusal must say: "CODE sentence", the
// command, and for a key's refusal the key and the rule; the Refused
// effect's Reason is the same text.
func checkRefusal(t *testing.T, p rewrite.Plan) {
	t.Helper()
	checkErrorText(t, p.Err)
	if len(p.Effects) != 1 || p.Effects[0].Kind != rewrite.Refused {
		t.Errorf("a refusal records exactly one Refused effect, got %d", len(p.Effects))
		return
	}
	e := p.Effects[0]
	if e.Reason != p.Err {
		t.Errorf("Reason %q differs from Err %q", e.Reason, p.Err)
	}
	if !strings.Contains(p.Err, " "+e.Command+" ") && !strings.Contains(p.Err, " "+e.Command+":") {
		t.Errorf("error %q does not name the command %s", p.Err, e.Command)
	}
	if e.Key != nil && !strings.Contains(p.Err, strconv.Quote(string(e.Key))) {
		t.Errorf("error %q does not name the key %q", p.Err, e.Key)
	}
	if e.Rule != nil && !strings.Contains(p.Err, fmt.Sprintf("rule %d %q", e.Rule.Index+1, e.Rule.Pattern.String())) {
		t.Errorf("error %q does not name rule %d", p.Err, e.Rule.Index+1)
	}
}

func scriptName(s *rewrite.Script) string {
	if s == nil {
		return "<nil>"
	}
	return s.Name
}

// TestDecideKeys covers the NeedKeys path: the keys come from COMMAND
// GETKEYSANDFLAGS (here written out as the server answers for SORT).
func TestDecideKeys(t *testing.T) {
	d := testDecider(t, testConfig, "")
	_, bob, _ := sessions(testWorld())
	ro := keyspec.KeyRO | keyspec.KeyAccess
	ow := keyspec.KeyOW | keyspec.KeyUpdate
	kf := func(k string, f keyspec.KeyFlags) keyspec.KeyWithFlags { return keyspec.KeyWithFlags{Key: k, Flags: f} }
	for _, c := range []struct {
		args    []string
		keys    []keyspec.KeyWithFlags
		kind    rewrite.Kind
		effects []string
	}{
		{[]string{"SORT", "plain", "STORE", "resource:lock"}, []keyspec.KeyWithFlags{kf("plain", ro), kf("resource:lock", ow)},
			rewrite.Refuse, []string{"Refused SORT key=resource:lock rule=0 owner=conn:bob holder=conn:alice"}},
		{[]string{"sort", "resource:lock", "STORE", "plain"}, []keyspec.KeyWithFlags{kf("resource:lock", ro), kf("plain", ow)},
			rewrite.Forward, nil},
		{[]string{"SORT", "plain", "STORE", "obs:a"}, []keyspec.KeyWithFlags{kf("plain", ro), kf("obs:a", ow)},
			rewrite.Forward, []string{"Observed SORT key=obs:a rule=2 owner=conn:bob"}},
		{[]string{"SORT", "plain", "STORE", "other"}, []keyspec.KeyWithFlags{kf("plain", ro), kf("other", ow)},
			rewrite.Forward, nil},
		// A key without flags may do anything: treated as an overwrite.
		{[]string{"MODCMD", "resource:lock"}, []keyspec.KeyWithFlags{kf("resource:lock", 0)},
			rewrite.Refuse, []string{"Refused MODCMD key=resource:lock rule=0 owner=conn:bob holder=conn:alice"}},
	} {
		p := d.DecideKeys(bs(c.args...), c.keys, bob)
		checkPlan(t, p, decideCase{args: c.args, kind: c.kind, effects: c.effects, code: map[bool]string{true: "LOCKED"}[c.kind == rewrite.Refuse]})
	}
}

// TestDecideInactive: without rules (or without a table) nothing is
// decided, not even FLUSHALL.
func TestDecideInactive(t *testing.T) {
	alice, _, _ := sessions(testWorld())
	for _, d := range []*rewrite.Decider{
		nil,
		{Table: goldenTable(t)},
		{Table: goldenTable(t), Rules: mustRules(t), OnFlush: policy.FlushReject},
		{Rules: testDecider(t, testConfig, "").Rules, OnFlush: policy.FlushReject},
	} {
		for _, args := range [][]string{{"FLUSHALL"}, {"DEL", "resource:lock"}, {}} {
			if p := d.Decide(bs(args...), alice, nil); !reflect.DeepEqual(p, rewrite.Plan{}) {
				t.Errorf("%+v: %q → %+v, want the zero Plan", d, args, p)
			}
		}
	}
	if d := (&rewrite.Decider{Table: goldenTable(t), Rules: mustRules(t)}); d.Active() {
		t.Error("Active with no rules")
	}
	if d := testDecider(t, testConfig, ""); !d.Active() {
		t.Error("not Active with rules")
	}
}

func mustRules(t testing.TB, locks ...policy.LockRule) *policy.Rules {
	t.Helper()
	r, err := policy.NewRules(locks)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCounterKey: the counter lives in the lock's hash slot whenever a key
// can have one there (it keeps a tag; a key without '}' is made its own
// tag). Slots are computed with Valkey's CRC16.
func TestCounterKey(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"resource:lock", "{resource:lock}:lockproxy:grants"},
		{"{user:1}:lock", "{user:1}:lock:lockproxy:grants"},
		{"lock:{a}:{b}", "lock:{a}:{b}:lockproxy:grants"},
		{"a{b", "{a{b}:lockproxy:grants"},
		{"x}y:lock", "x}y:lock:lockproxy:grants"}, // no tag can hold it: left as is
	} {
		if got := string(rewrite.CounterKey([]byte(c.key))); got != c.want {
			t.Errorf("CounterKey(%q) = %q, want %q", c.key, got, c.want)
		}
	}
	// A key with a '}' and no tag ("x{}", "a}b") hashes whole, and no
	// other key can carry it as a tag: those are left out.
	for _, k := range []string{"resource:lock", "{user:1}:lock", "a{b", "{", "{{a}}", "lock", "\x00", "a\r\nb"} {
		ck := rewrite.CounterKey([]byte(k))
		if keySlot([]byte(k)) != keySlot(ck) {
			t.Errorf("CounterKey(%q) = %q is in slot %d, the lock in %d", k, ck, keySlot(ck), keySlot([]byte(k)))
		}
	}
}

// keySlot is Valkey's keyHashSlot (cluster.c): CRC16 of the hash tag, or
// of the whole key when it has none, mod 16384.
func keySlot(key []byte) int {
	s := -1
	for i, c := range key {
		if c == '{' {
			s = i
			break
		}
	}
	if s >= 0 {
		for e := s + 1; e < len(key); e++ {
			if key[e] == '}' {
				if e > s+1 {
					key = key[s+1 : e]
				}
				break
			}
		}
	}
	return int(crc16(key) & 16383)
}

func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestKeySlotReference(t *testing.T) {
	// Values from the Valkey cluster specification and CLUSTER KEYSLOT.
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16 = %#x", got)
	}
	for k, want := range map[string]int{"foo": 12182, "{user1000}.following": keySlot([]byte("user1000")), "somekey": 11058} {
		if got := keySlot([]byte(k)); got != want {
			t.Errorf("slot(%q) = %d, want %d", k, got, want)
		}
	}
}
