package rewrite_test

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/config"
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
      mark: key
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
func testDecider(tb testing.TB, yamlText string, onFlush policy.FlushPolicy) *rewrite.Decider {
	tb.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yamlText))
	if err != nil {
		tb.Fatalf("config: %v", err)
	}
	rules, err := cfg.Rules()
	if err != nil {
		tb.Fatalf("rules: %v", err)
	}
	d := &rewrite.Decider{Table: goldenTable(tb), Rules: rules, OnFlush: cfg.OnFlush}
	if onFlush != "" {
		d.OnFlush = onFlush
	}
	return d
}

// The sessions of the decision tests. carol is another connection of
// alice's application (same client name, same host). Who holds which lock
// is not theirs to say: plans differ only by the owner they carry.
func sessions() (alice, bob, carol *fakeSession) {
	alice = &fakeSession{conn: "conn:alice", name: "name:app", addr: "10.0.0.1"}
	bob = &fakeSession{conn: "conn:bob", name: "name:other", addr: "10.0.0.2"}
	carol = &fakeSession{conn: "conn:carol", name: "name:app", addr: "10.0.0.1"}
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

// Keys of the default templates, and the scripts' keep_lapsed argument
// when the Decider does not set one (10 minutes).
const (
	resCtr  = "{resource:lock}:lockproxy:grants"
	resRecs = "{resource:lock}:lockproxy:owners"
	userCtr = "{user:1}:lock:lockproxy:grants"
	keep    = "600000"
	idx     = rewrite.StandaloneIndexKey // the locks' index, in front of one Valkey
)

// lockKeys are the three keys every lock script gets for one lock.
func lockKeys(lock, counter string) []string {
	return []string{lock, counter, string(rewrite.RecordsKey([]byte(lock)))}
}

func defaultLockKeys(lock string) []string { return lockKeys(lock, ctr(lock)) }

func decideCases() []decideCase {
	w := strings.Fields
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	run := func(s *rewrite.Script, shape rewrite.Shape, keys, args []string, effects ...string) decideCase {
		return decideCase{kind: rewrite.Run, script: s, shape: shape, keys: keys, sargs: args, effects: effects}
	}
	// acquire: SET lock ... NX as Acquire; set are SET's arguments after the key.
	acquire := func(keys []string, owner string, set []string, effects ...string) decideCase {
		return run(rewrite.Acquire, rewrite.AcquireReply, keys, cat([]string{owner, keep, "", "-1", "", idx}, set), effects...)
	}
	// release: DEL/UNLINK as Release; locks are owner, mode pairs (the
	// index follows each).
	release := func(cmd string, plain, keys []string, locks []string, effects ...string) decideCase {
		var per []string
		for i := 0; i+1 < len(locks); i += 2 {
			per = append(per, locks[i], locks[i+1], idx)
		}
		return run(rewrite.Release, rewrite.ReleaseReply, cat(plain, keys),
			cat([]string{cmd, strconv.Itoa(len(plain)), keep}, per), effects...)
	}
	// holder: a command Holder runs for the lock's holder.
	holder := func(keys []string, owner, fail, code string, cmd []string, effects ...string) decideCase {
		return run(rewrite.Holder, rewrite.HolderReply, keys, cat([]string{owner, keep, fail, code, idx}, cmd), effects...)
	}
	fenced := func(keys, args []string, effects ...string) decideCase {
		return run(rewrite.Fenced, rewrite.FencedReply, keys, args, effects...)
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
	res := defaultLockKeys("resource:lock")
	// The fence keys of a candidate lock: its counter, records and marks.
	// {r}:flock is a candidate once, though two guard templates ("{base}:data"
	// and "{base}:items:*") can read {r}:data back as its.
	flock2 := []string{"{r}:fence", "{r}:flock:lockproxy:owners", "{r}:fence:high"}
	sflock2 := w("{s}:fence {s}:flock:lockproxy:owners {s}:fence:high")

	return []decideCase{
		// Keys no rule matches are never touched.
		named(forward(), "GET plain", "", "GET", "plain"),
		named(forward(), "SET plain", "", "SET", "plain", "v"),
		named(forward(), "SET plain NX", "", "SET", "plain", "v", "NX", "PX", "100"),
		named(forward(), "DEL plain keys", "", "DEL", "p1", "p2"),
		named(forward(), "EXPIRE plain", "", "EXPIRE", "p1", "10"),
		named(forward(), "PING", "", "PING"),
		named(forward(), "unknown command", "", "NOSUCHCMD", "plain"),
		// An unknown command naming a protected key: only Valkey can tell
		// whether it has it (a module's) and what it does to the key.
		named(decideCase{kind: rewrite.NeedKeys}, "unknown command on a lock key", "", "NOSUCHCMD", "resource:lock"),
		named(decideCase{kind: rewrite.NeedKeys}, "unknown subcommand on a lock key", "", "OBJECT", "NOSUCH", "resource:lock"),
		named(decideCase{kind: rewrite.NeedKeys}, "SORT ... STORE with a NUL byte", "", "SORT", "plain", "STORE\x00x", "resource:lock"),
		named(forward(), "arity error", "", "SET", "resource:lock"),

		// Reads of a lock are left alone.
		named(forward(), "GET lock", "bob", "GET", "resource:lock"),
		named(forward(), "EXISTS lock", "bob", "EXISTS", "resource:lock", "other:lock"),
		named(forward(), "PTTL lock", "bob", "PTTL", "resource:lock"),
		named(forward(), "OBJECT ENCODING lock", "bob", "OBJECT", "ENCODING", "resource:lock"),
		named(forward(), "COPY from a lock reads it", "bob", "COPY", "resource:lock", "plain"),
		named(forward(), "GETEX without options is a read", "bob", "GETEX", "resource:lock"),
		named(forward(), "reading lockproxy's own keys is allowed", "bob", "HGETALL", resRecs),

		// Acquisition: SET NX in any case, option order and expiry form.
		named(acquire(res, "conn:alice", w("abc NX PX 30000"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET NX PX", "", "SET", "resource:lock", "abc", "NX", "PX", "30000"),
		named(acquire(res, "conn:bob", w("xyz px 30000 nx"),
			"Grant SET key=resource:lock rule=0 owner=conn:bob value=xyz"),
			"set px nx, another owner (contention is Valkey's answer)", "bob", "set", "resource:lock", "xyz", "px", "30000", "nx"),
		named(acquire(res, "conn:alice", w("abc Ex 30 nX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET EX NX mixed case", "", "SET", "resource:lock", "abc", "Ex", "30", "nX"),
		named(acquire(res, "conn:alice", w("abc NX PXAT 1700000000123"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET NX PXAT", "", "SET", "resource:lock", "abc", "NX", "PXAT", "1700000000123"),
		named(acquire(res, "conn:alice", w("abc EXAT 1700000000 NX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET EXAT NX", "", "SET", "resource:lock", "abc", "EXAT", "1700000000", "NX"),
		named(acquire(res, "conn:alice", w("abc KEEPTTL NX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET KEEPTTL NX", "", "SET", "resource:lock", "abc", "KEEPTTL", "NX"),
		named(acquire(res, "conn:alice", w("abc NX"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET NX without lease", "", "SET", "resource:lock", "abc", "NX"),
		named(with(run(rewrite.Acquire, rewrite.AcquireGetReply, res, cat([]string{"conn:alice", keep, "get", "-1", "", idx}, w("abc NX GET PX 100")),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"), func(c *decideCase) {}),
			"SET NX GET: a nil reply means it took the lock", "", "SET", "resource:lock", "abc", "NX", "GET", "PX", "100"),
		named(acquire(lockKeys("{user:1}:lock", userCtr), "conn:alice", w("1 NX PX 100"),
			"Grant SET key={user:1}:lock rule=0 owner=conn:alice value=1"),
			"hash tag kept in the counter and the records", "", "SET", "{user:1}:lock", "1", "NX", "PX", "100"),
		named(acquire(w("a}b:lock a}b:lock:lockproxy:grants a}b:lock:lockproxy:owners"), "conn:alice", w("v NX"),
			"Grant SET key=a}b:lock rule=0 owner=conn:alice value=v"),
			"key that cannot be wrapped in a tag", "", "SET", "a}b:lock", "v", "NX"),
		named(acquire(lockKeys("{r}:flock", "{r}:fence"), "conn:alice", w("tok NX PX 100"),
			"Grant SET key={r}:flock rule=5 owner=conn:alice value=tok"),
			"fence counter template", "", "SET", "{r}:flock", "tok", "NX", "PX", "100"),
		named(acquire(defaultLockKeys("named:a"), "name:app", w("n NX"),
			"Grant SET key=named:a rule=4 owner=name:app value=n"),
			"client_name owner", "carol", "SET", "named:a", "n", "NX"),
		named(acquire(defaultLockKeys("obs:a"), "conn:alice", w("v NX"),
			"Grant SET key=obs:a rule=2 owner=conn:alice value=v"),
			"release: observe still records grants", "", "SET", "obs:a", "v", "NX"),
		named(forward(), "SET NX XX: Valkey answers the syntax error", "", "SET", "resource:lock", "abc", "NX", "XX"),
		named(forward(), "SET NX PX 0: Valkey answers", "", "SET", "resource:lock", "abc", "NX", "PX", "0"),
		named(forward(), "SET NX PX not a number", "", "SET", "resource:lock", "abc", "NX", "PX", "soon"),
		named(forward(), "SET NX EX PX", "", "SET", "resource:lock", "abc", "NX", "EX", "1", "PX", "1"),
		named(forward(), "SET NX unknown option", "", "SET", "resource:lock", "abc", "NX", "BOGUS"),
		// Options repeated as Valkey allows them (setopts.go): an
		// acquisition like any other, not forwarded.
		named(acquire(res, "conn:alice", w("abc NX PX a PX 100"),
			"Grant SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET NX with a repeated PX", "", "SET", "resource:lock", "abc", "NX", "PX", "a", "PX", "100"),
		named(refuse("UNSUPPORTED", "Refused SET key=resource:lock rule=0"),
			"SET with a NUL byte in an option", "", "SET", "resource:lock", "abc", "NX\x00"),
		named(refuse("LOCKED", "Refused COPY key={r}:data"),
			"COPY ... DB onto a guarded key", "", "COPY", "{r}:data", "{r}:data", "DB", "0"),
		named(refuse("LOCKED", "Refused MOVE key={r}:data"), "MOVE of a guarded key", "", "MOVE", "{r}:data", "1"),
		named(forward(), "COPY ... DB of plain keys", "", "COPY", "p1", "p2", "DB", "1"),
		named(refuse("LOCKED", "Refused SET key={lockproxy}:lockproxy:flush"), "the flush probe is lockproxy's", "", "SET", "{lockproxy}:lockproxy:flush", "1"),
		// SETNX is the acquisition of old clients: the same script as
		// SET ... NX (no lease), answering :1 or :0.
		named(run(rewrite.Acquire, rewrite.SetNXReply, res, []string{"conn:bob", keep, "", "-1", "", idx, "x", "NX"},
			"Grant SETNX key=resource:lock rule=0 owner=conn:bob value=x"),
			"SETNX (legacy acquisition)", "bob", "SETNX", "resource:lock", "x"),

		// Release: always the Release script, whoever sends it; the
		// script decides from the owner records. The plan carries the
		// owner and the rule's mode.
		named(release("DEL", nil, res, w("conn:alice rewrite"),
			"Released DEL key=resource:lock rule=0 owner=conn:alice"),
			"DEL", "", "DEL", "resource:lock"),
		named(release("DEL", nil, res, w("conn:bob rewrite"),
			"Released DEL key=resource:lock rule=0 owner=conn:bob"),
			"DEL by another owner: the same plan, its own owner", "bob", "DEL", "resource:lock"),
		named(release("UNLINK", nil, res, w("conn:alice rewrite"),
			"Released UNLINK key=resource:lock rule=0 owner=conn:alice"),
			"unlink", "", "unlink", "resource:lock"),
		named(release("DEL", nil, lockKeys("{r}:flock", "{r}:fence"), w("conn:alice rewrite"),
			"Released DEL key={r}:flock rule=5 owner=conn:alice"),
			"DEL of a fenced lock checks the fence counter", "", "DEL", "{r}:flock"),
		named(release("DEL", nil, defaultLockKeys("named:a"), w("name:app rewrite"),
			"Released DEL key=named:a rule=4 owner=name:app"),
			"DEL by a sibling connection under client_name", "carol", "DEL", "named:a"),
		named(release("DEL", nil, res, w("conn:carol rewrite"),
			"Released DEL key=resource:lock rule=0 owner=conn:carol"),
			"sibling pooled connection under session: connection is its own owner", "carol", "DEL", "resource:lock"),
		named(release("DEL", nil, defaultLockKeys("a\r\nb:lock"), w("conn:bob rewrite"),
			"Released DEL key=a\r\nb:lock rule=0 owner=conn:bob"),
			"a key with CR LF", "bob", "DEL", "a\r\nb:lock"),
		named(release("DEL", nil, defaultLockKeys("rej:a"), w("conn:alice reject"),
			"Released DEL key=rej:a rule=1 owner=conn:alice"),
			"release: reject", "", "DEL", "rej:a"),
		named(release("DEL", nil, defaultLockKeys("obs:a"), w("conn:bob observe"),
			"Released DEL key=obs:a rule=2 owner=conn:bob"),
			"release: observe (forwarded inside the script, which says whose lock it was)", "bob", "DEL", "obs:a"),
		named(release("DEL", nil, defaultLockKeys("fwd:a"), w("conn:bob rewrite+"),
			"Released DEL key=fwd:a rule=3 owner=conn:bob"),
			"unknown_owner: forward", "bob", "DEL", "fwd:a"),

		// Multi-key DEL: plain keys as asked, locks by their rule, one sum.
		named(release("DEL", w("p1 p2"), cat(res, lockKeys("{user:1}:lock", userCtr)), w("conn:alice rewrite conn:alice rewrite"),
			"Released DEL key=resource:lock rule=0 owner=conn:alice plain=2",
			"Released DEL key={user:1}:lock rule=0 owner=conn:alice plain=2"),
			"multi-key DEL mixed", "", "DEL", "p1", "resource:lock", "p2", "{user:1}:lock"),
		named(release("UNLINK", w("p1"), cat(defaultLockKeys("obs:a"), res), w("conn:alice observe conn:alice rewrite"),
			"Released UNLINK key=obs:a rule=2 owner=conn:alice plain=1",
			"Released UNLINK key=resource:lock rule=0 owner=conn:alice plain=1"),
			"multi-key UNLINK with an observed lock", "", "UNLINK", "p1", "obs:a", "resource:lock"),
		named(release("DEL", nil, cat(res, res), w("conn:alice rewrite conn:alice rewrite"),
			"Released DEL key=resource:lock rule=0 owner=conn:alice",
			"Released DEL key=resource:lock rule=0 owner=conn:alice"),
			"a lock named twice", "", "DEL", "resource:lock", "resource:lock"),
		named(with(refuse("LOCKED", "Refused DEL key={r}:data"), func(c *decideCase) {
			c.err = `LOCKED lockproxy refused DEL: it deletes lock keys together with "{r}:data", a key a lock guards, whose delete must pass the lock's fence; send the guarded keys in a command of their own`
		}), "a lock and a guarded key in one DEL", "", "DEL", "resource:lock", "{r}:data"),

		// Lease changes: the Holder script, for the holder only; refused
		// (NOTOWNER) inside it for an owner without a record.
		named(holder(res, "conn:alice", "0", "NOTOWNER", w("PEXPIRE 30000"),
			"Renewed PEXPIRE key=resource:lock rule=0 owner=conn:alice"),
			"PEXPIRE", "", "PEXPIRE", "resource:lock", "30000"),
		named(holder(res, "conn:bob", "0", "NOTOWNER", w("EXPIRE 30 GT"),
			"Renewed EXPIRE key=resource:lock rule=0 owner=conn:bob"),
			"expire GT", "bob", "expire", "resource:lock", "30", "GT"),
		named(holder(res, "conn:alice", "0", "NOTOWNER", w("PEXPIREAT 1700000000000"),
			"Renewed PEXPIREAT key=resource:lock rule=0 owner=conn:alice"),
			"PEXPIREAT", "", "PEXPIREAT", "resource:lock", "1700000000000"),
		named(holder(res, "conn:alice", "0", "NOTOWNER", w("EXPIREAT 1700000000"),
			"Renewed EXPIREAT key=resource:lock rule=0 owner=conn:alice"),
			"EXPIREAT", "", "EXPIREAT", "resource:lock", "1700000000"),
		named(holder(res, "conn:alice", "0", "NOTOWNER", w("PERSIST"),
			"Renewed PERSIST key=resource:lock rule=0 owner=conn:alice"),
			"PERSIST", "", "PERSIST", "resource:lock"),
		named(holder(res, "conn:alice", "nil", "NOTOWNER", w("GETEX PX 100"),
			"Renewed GETEX key=resource:lock rule=0 owner=conn:alice"),
			"GETEX PX", "", "GETEX", "resource:lock", "PX", "100"),
		named(holder(defaultLockKeys("rej:a"), "conn:alice", "0", "NOTOWNER", w("PEXPIRE 100"),
			"Renewed PEXPIRE key=rej:a rule=1 owner=conn:alice"),
			"renewal under release: reject", "", "PEXPIRE", "rej:a", "100"),
		named(holder(defaultLockKeys("named:a"), "name:app", "0", "NOTOWNER", w("PEXPIRE 100"),
			"Renewed PEXPIRE key=named:a rule=4 owner=name:app"),
			"renewal by a sibling under client_name", "carol", "PEXPIRE", "named:a", "100"),
		named(forward("Observed PEXPIRE key=obs:a rule=2 owner=conn:alice"),
			"renewal under observe", "", "PEXPIRE", "obs:a", "100"),

		// The holder's SET of its own lock: Holder too, LOCKED for others.
		named(holder(res, "conn:alice", "nil", "LOCKED", w("SET abc XX PX 30000"),
			"SetValue SET key=resource:lock rule=0 owner=conn:alice value=abc"),
			"SET XX", "", "SET", "resource:lock", "abc", "XX", "PX", "30000"),
		named(holder(res, "conn:alice", "nil", "LOCKED", w("SET def XX KEEPTTL GET"),
			"SetValue SET key=resource:lock rule=0 owner=conn:alice value=def"),
			"SET XX KEEPTTL GET changes the holder's value", "", "SET", "resource:lock", "def", "XX", "KEEPTTL", "GET"),
		named(holder(res, "conn:bob", "nil", "LOCKED", w("SET x"),
			"SetValue SET key=resource:lock rule=0 owner=conn:bob value=x"),
			"plain SET of a lock", "bob", "SET", "resource:lock", "x"),
		named(forward("Observed SET key=obs:a rule=2 owner=conn:alice"),
			"SET under observe", "", "SET", "obs:a", "x"),

		// Overwrites and removals of a lock by other commands: refused
		// with LOCKED at plan time, whoever sends them.
		named(with(refuse("LOCKED", "Refused GETSET key=resource:lock rule=0 owner=conn:alice"), func(c *decideCase) {
			c.err = `LOCKED lockproxy refused GETSET on lock key "resource:lock" (rule 1 "*:lock"): it would overwrite or remove a lock that another client may hold; acquire with SET key token NX PX ms and release with your token: EVAL "if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('DEL',KEYS[1]) else return 0 end" 1 <key> <token>`
		}), "GETSET", "", "GETSET", "resource:lock", "x"),
		named(refuse("LOCKED", "Refused GETDEL key=resource:lock rule=0 owner=conn:bob"),
			"GETDEL", "bob", "GETDEL", "resource:lock"),
		named(refuse("LOCKED", "Refused RENAME key=resource:lock rule=0 owner=conn:bob"),
			"RENAME from a lock", "bob", "RENAME", "resource:lock", "plain"),
		named(refuse("LOCKED", "Refused RENAME key=resource:lock rule=0 owner=conn:bob"),
			"RENAME onto a lock", "bob", "RENAME", "plain", "resource:lock"),
		named(refuse("LOCKED", "Refused RENAMENX key=resource:lock rule=0 owner=conn:bob"),
			"RENAMENX onto a lock", "bob", "RENAMENX", "plain", "resource:lock"),
		named(refuse("LOCKED", "Refused MOVE key=resource:lock rule=0 owner=conn:bob"),
			"MOVE", "bob", "MOVE", "resource:lock", "1"),
		named(refuse("LOCKED", "Refused COPY key=resource:lock rule=0 owner=conn:bob"),
			"COPY REPLACE onto a lock", "bob", "COPY", "plain", "resource:lock", "REPLACE"),
		named(refuse("LOCKED", "Refused RESTORE key=resource:lock rule=0 owner=conn:bob"),
			"RESTORE REPLACE", "bob", "RESTORE", "resource:lock", "0", "payload", "REPLACE"),
		named(refuse("LOCKED", "Refused APPEND key=resource:lock rule=0 owner=conn:bob"),
			"APPEND", "bob", "APPEND", "resource:lock", "x"),
		named(refuse("LOCKED", "Refused SETRANGE key=resource:lock rule=0 owner=conn:bob"),
			"SETRANGE", "bob", "SETRANGE", "resource:lock", "0", "x"),
		named(refuse("LOCKED", "Refused INCR key=resource:lock rule=0 owner=conn:bob"),
			"INCR", "bob", "INCR", "resource:lock"),
		named(refuse("LOCKED", "Refused MSET key=resource:lock rule=0 owner=conn:bob"),
			"MSET", "bob", "MSET", "a", "1", "resource:lock", "2"),
		named(refuse("LOCKED", "Refused MSET key=resource:lock rule=0 owner=conn:bob"),
			"MSET with an observed lock first: the refusal alone", "bob", "MSET", "obs:a", "1", "resource:lock", "2"),
		named(refuse("LOCKED", "Refused SUNIONSTORE key=resource:lock rule=0 owner=conn:bob"),
			"*STORE onto a lock", "bob", "SUNIONSTORE", "resource:lock", "s1", "s2"),
		named(refuse("LOCKED", "Refused GEORADIUS key=resource:lock rule=0 owner=conn:bob"),
			"GEORADIUS ... STORE a STORE lock: Valkey writes the last STORE", "bob", "GEORADIUS", "g", "0", "0", "1", "km", "STORE", "a", "STORE", "resource:lock"),
		named(forward("Observed GETSET key=obs:a rule=2 owner=conn:alice"),
			"overwrite under observe", "", "GETSET", "obs:a", "x"),

		// lockproxy's own keys: readable, never writable by a client.
		named(with(refuse("LOCKED", "Refused SET key="+resCtr), func(c *decideCase) {
			c.err = `LOCKED lockproxy refused SET on "{resource:lock}:lockproxy:grants": it is one of lockproxy's own keys (a grant counter, owner records, the locks' index, fencing marks or the key a WAIT is prepared with), which only lockproxy's scripts may change; read it if you need to, with GET, HGETALL or EVAL_RO`
		}), "SET of a grant counter", "", "SET", resCtr, "7"),
		named(refuse("LOCKED", "Refused HSET key="+resRecs), "HSET of owner records", "", "HSET", resRecs, "conn:bob", "1 0 0 abc"),
		named(refuse("LOCKED", "Refused DEL key="+resRecs), "DEL of owner records", "", "DEL", "p1", resRecs),
		named(refuse("LOCKED", "Refused INCR key={r}:fence"), "INCR of a fence counter", "", "INCR", "{r}:fence"),
		named(refuse("LOCKED", "Refused DEL key={r}:fence:high"), "DEL of a fence's highest tokens", "", "DEL", "{r}:fence:high"),
		named(refuse("LOCKED", "Refused RENAME key={r}:fence"), "RENAME onto a fence counter", "", "RENAME", "plain", "{r}:fence"),
		named(refuse("LOCKED", "Refused EVAL key="+resCtr), "EVAL given a grant counter", "",
			"EVAL", "return redis.call('INCR', KEYS[1])", "1", resCtr),
		named(refuse("LOCKED", "Refused FCALL key={r}:fence:high"), "FCALL given a fence mark", "",
			"FCALL", "f", "1", "{r}:fence:high"),
		named(forward(), "EVAL_RO may read them", "", "EVAL_RO", "return redis.call('GET', KEYS[1])", "1", resCtr),

		// FLUSHALL / FLUSHDB / SWAPDB.
		named(with(refuse("LOCKED", "Refused FLUSHALL"), func(c *decideCase) {
			c.err = "LOCKED lockproxy refused FLUSHALL: it would delete every lock without checking who holds it (on_flush: reject); delete keys by name, or set on_flush: allow in the lockproxy config"
		}), "FLUSHALL under on_flush: reject", "", "FLUSHALL"),
		named(refuse("LOCKED", "Refused FLUSHDB"), "flushdb async under on_flush: reject", "", "flushdb", "async"),
		named(refuse("LOCKED", "Refused SWAPDB"), "SWAPDB under on_flush: reject", "", "SWAPDB", "0", "1"),
		named(with(run(rewrite.Flush, rewrite.AsIs, nil, w("FLUSHALL"), "Flushed FLUSHALL"), func(c *decideCase) { c.flush = policy.FlushAllow }),
			"FLUSHALL under on_flush: allow: raises the epoch", "", "FLUSHALL"),
		named(with(run(rewrite.Flush, rewrite.AsIs, nil, w("FLUSHDB SYNC"), "Flushed FLUSHDB"), func(c *decideCase) { c.flush = policy.FlushAllow }),
			"FLUSHDB SYNC under on_flush: allow: raises the epoch", "", "FLUSHDB", "SYNC"),
		named(with(forward("Flushed SWAPDB"), func(c *decideCase) { c.flush = policy.FlushAllow }),
			"swapdb under on_flush: allow", "", "swapdb", "0", "1"),

		// Fencing: every write to a guarded key runs in Fenced, which
		// finds the writer's token in the candidate lock's records (and
		// applies unfenced_writes when there is none).
		named(fenced(cat(flock2, w("{r}:data")), w("conn:alice 2 1 1 highest reject {r}:data SET {r}:data v"),
			"FencedWrite SET key={r}:data rule=5 owner=conn:alice"),
			"fenced SET (highest)", "", "SET", "{r}:data", "v"),
		named(fenced(cat(flock2, w("{r}:data")), w("conn:bob 2 1 1 highest reject {r}:data SET {r}:data v"),
			"FencedWrite SET key={r}:data rule=5 owner=conn:bob"),
			"fenced SET by another client: the same plan, its own owner", "bob", "SET", "{r}:data", "v"),
		named(fenced(cat(flock2, w("{r}:items:1")), w("conn:alice 2 1 1 highest reject {r}:items:1 hset {r}:items:1 f v"),
			"FencedWrite HSET key={r}:items:1 rule=5 owner=conn:alice"),
			"fenced hset, glob guard", "", "hset", "{r}:items:1", "f", "v"),
		named(fenced(cat(flock2, w("{r}:data")), w("conn:alice 2 1 1 highest reject {r}:data DEL {r}:data"),
			"FencedWrite DEL key={r}:data rule=5 owner=conn:alice"),
			"fenced DEL of a guarded key", "", "DEL", "{r}:data"),
		named(fenced(cat(flock2, flock2, w("{r}:data {r}:items:2")),
			w("conn:alice 2 2 1 highest reject {r}:data 1 highest reject {r}:items:2 MSET {r}:data 1 {r}:items:2 2"),
			"FencedWrite MSET key={r}:data rule=5 owner=conn:alice",
			"FencedWrite MSET key={r}:items:2 rule=5 owner=conn:alice"),
			"fenced MSET, two checks", "", "MSET", "{r}:data", "1", "{r}:items:2", "2"),
		named(fenced(cat(sflock2, w("{s}:data")), w("conn:alice 2 1 1 highest reject {s}:data SET {s}:data v"),
			"FencedWrite SET key={s}:data rule=5 owner=conn:alice"),
			"each guarded key names its own lock", "", "SET", "{s}:data", "v"),
		named(fenced(w("{c}:cfence {c}:clock:lockproxy:owners {c}:cfence:high {c}:cdata"), w("conn:alice 2 1 1 current observe {c}:cdata INCR {c}:cdata"),
			"FencedWrite INCR key={c}:cdata rule=6 owner=conn:alice"),
			"fenced INCR (current, unfenced observed)", "", "INCR", "{c}:cdata"),
		named(fenced(w("{a}:afence {a}:alock:lockproxy:owners {a}:afence:high {a}:adata"), w("conn:bob 2 1 1 current allow {a}:adata SET {a}:adata v"),
			"FencedWrite SET key={a}:adata rule=7 owner=conn:bob"),
			"unfenced_writes: allow still checks a holder's token", "bob", "SET", "{a}:adata", "v"),
		named(forward(), "read of a guarded key", "bob", "GET", "{r}:data"),
		named(forward(), "read of guarded keys", "", "HGETALL", "{r}:items:1"),
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
			alice, bob, carol := sessions()
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
	_, bob, _ := sessions()
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
			rewrite.Refuse, []string{"Refused SORT key=resource:lock rule=0 owner=conn:bob"}},
		{[]string{"sort", "resource:lock", "STORE", "plain"}, []keyspec.KeyWithFlags{kf("resource:lock", ro), kf("plain", ow)},
			rewrite.Forward, nil},
		{[]string{"SORT", "plain", "STORE", "obs:a"}, []keyspec.KeyWithFlags{kf("plain", ro), kf("obs:a", ow)},
			rewrite.Forward, []string{"Observed SORT key=obs:a rule=2 owner=conn:bob"}},
		{[]string{"SORT", "plain", "STORE", "other"}, []keyspec.KeyWithFlags{kf("plain", ro), kf("other", ow)},
			rewrite.Forward, nil},
		// A key without flags may do anything: treated as an overwrite.
		{[]string{"MODCMD", "resource:lock"}, []keyspec.KeyWithFlags{kf("resource:lock", 0)},
			rewrite.Refuse, []string{"Refused MODCMD key=resource:lock rule=0 owner=conn:bob"}},
	} {
		p := d.DecideKeys(bs(c.args...), c.keys, bob)
		checkPlan(t, p, decideCase{args: c.args, kind: c.kind, effects: c.effects, code: map[bool]string{true: "LOCKED"}[c.kind == rewrite.Refuse]})
	}
}

// TestDecideInactive: without rules (or without a table) nothing is
// decided, not even FLUSHALL.
func TestDecideInactive(t *testing.T) {
	alice, _, _ := sessions()
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
		{"lock:{a}:{b}", "lock:{a}:{b}}:lockproxy:grants"}, // ends in '}': one more
		{"{a:lock}", "{a:lock}}:lockproxy:grants"},         // not "a:lock"'s counter
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
