package e2e_test

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// Fail closed (issue 38): a command on a lock key, a key a lock guards or
// one of lockproxy's own keys is understood as Valkey understands it, or
// refused; never forwarded because lockproxy's own reading of it gave up.
// The victim holds v:lock with victimtoken; the stranger is another
// connection (session: connection).

const failClosedRule = "locks:\n  - pattern: \"*:lock\"\n"

// Valkey accepts repeated expiry options (the last one wins): a stranger's
// SET with one repeated must not overwrite the victim's lock.
func TestFailClosedSetRepeatedOptions(t *testing.T) {
	e := newEnv(t, rulesOptions(t, failClosedRule))
	d := e.direct()
	victim, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")
	for _, opts := range [][]string{
		{"PX", "1", "PX", "1"},
		{"EX", "100", "EX", "100"},
		{"KEEPTTL", "KEEPTTL"},
		{"xx", "XX", "px", "abc", "PX", "5000"},
		{"GET", "GET", "EXAT", "1", "EXAT", "99999999999"},
	} {
		got := stranger.do(append([]string{"SET", "v:lock", "x"}, opts...)...)
		mustContain(t, got, "-LOCKED lockproxy refused SET on lock key \"v:lock\"")
		eq(t, d.Get(ctx, "v:lock").Val(), "victimtoken")
	}
	// The holder may re-set its own lock with repeated options, and the
	// last expiry is the one Valkey keeps.
	eq(t, victim.do("SET", "v:lock", "victimtoken", "PX", "1", "PX", "700000"), "+OK\r\n")
	if ttl := d.PTTL(ctx, "v:lock").Val().Milliseconds(); ttl < 600000 {
		t.Fatalf("PTTL after the holder's SET ... PX 1 PX 700000 = %d ms, want the last expiry's", ttl)
	}
}

// SET ... NX with repeated options is an acquisition like any other: a
// grant and an owner record, so the taker can release it and a stranger
// cannot.
func TestFailClosedSetNXRepeatedOptionsGrants(t *testing.T) {
	e := newEnv(t, rulesOptions(t, failClosedRule))
	d := e.direct()
	a, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, a.do("SET", "v:lock", "tok", "NX", "PX", "a", "PX", "600000"), "+OK\r\n")
	if n := d.HLen(ctx, "{v:lock}:lockproxy:owners").Val(); n != 1 {
		t.Fatalf("owner records of v:lock after SET NX PX a PX 600000: %d, want 1", n)
	}
	eq(t, d.Get(ctx, "{v:lock}:lockproxy:grants").Val(), "1")
	mustContain(t, stranger.do("DEL", "v:lock"), "-NOTOWNER")
	eq(t, d.Get(ctx, "v:lock").Val(), "tok")
	eq(t, a.do("DEL", "v:lock"), ":1\r\n")
	// nx repeated, in any case
	eq(t, a.do("SET", "v:lock", "tok2", "nx", "NX", "ex", "600", "Ex", "600"), "+OK\r\n")
	eq(t, d.Get(ctx, "{v:lock}:lockproxy:grants").Val(), "2")
	mustContain(t, stranger.do("DEL", "v:lock"), "-NOTOWNER")
}

// Under max_lease, the lease a SET or GETEX leaves is its last expiry
// option's: PX 10 PX <long> is a long lease, refused.
func TestFailClosedLeaseLastExpiryWins(t *testing.T) {
	e := newEnv(t, rulesOptions(t, "locks:\n  - pattern: \"*:lock\"\n    max_lease: 60s\n"))
	d := e.direct()
	a := dialRaw(t, e.addr)
	eq(t, a.do("SET", "v:lock", "tok", "NX", "PX", "30000"), "+OK\r\n")
	mustContain(t, a.do("SET", "v:lock", "tok", "PX", "10", "PX", "999999999"), "-LEASE")
	mustContain(t, a.do("GETEX", "v:lock", "PX", "10", "PX", "999999999"), "-LEASE")
	mustContain(t, a.do("GETEX", "v:lock", "EX", "10", "EX", "999999"), "-LEASE")
	if ttl := d.PTTL(ctx, "v:lock").Val().Milliseconds(); ttl > 60000 {
		t.Fatalf("PTTL %d ms after refused lease changes: over max_lease", ttl)
	}
	// The acquisition too: its last PX is the lease asked.
	eq(t, a.do("DEL", "v:lock"), ":1\r\n")
	mustContain(t, a.do("SET", "v:lock", "tok", "NX", "PX", "10", "PX", "999999999"), "-LEASE")
	eq(t, d.Exists(ctx, "v:lock").Val(), int64(0))
}

// FUNCTION LOAD takes any number of REPLACE words: the library still gets
// the monitor, so a function registering its own evil__lockproxy cannot
// run unchecked through lockproxy.
func TestFailClosedFunctionLoadReplaceReplace(t *testing.T) {
	e := newEnv(t, rulesOptions(t, failClosedRule))
	d := e.direct()
	victim, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")
	lib := "#!lua name=evil\n" +
		"redis.register_function('evil', function(k) return redis.call('DEL', k[1]) end)\n" +
		"redis.register_function('evil__lockproxy', function(k) return redis.call('DEL', k[1]) end)"
	for _, load := range [][]string{
		{"FUNCTION", "LOAD", "REPLACE", "REPLACE", lib},
		{"FUNCTION", "LOAD", "replace", "Replace", "REPLACE", lib},
	} {
		got := stranger.do(load...)
		if got == bulk("evil") {
			code := d.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", "evil", "WITHCODE").String()
			if !strings.Contains(code, "__lockproxy_lib") {
				t.Fatalf("%q loaded the library without the monitor: %s", load[:len(load)-1], code)
			}
		}
		got = stranger.do("FCALL", "evil", "1", "v:lock")
		if got == ":1\r\n" {
			t.Fatalf("FCALL evil 1 v:lock from a stranger deleted the held lock")
		}
		eq(t, d.Get(ctx, "v:lock").Val(), "victimtoken")
	}
	// An unknown option is Valkey's error, as it came.
	eq(t, stranger.do("FUNCTION", "LOAD", "REPLACE", "NOPE", lib), "-"+d.Do(ctx, "FUNCTION", "LOAD", "REPLACE", "NOPE", lib).Err().Error()+"\r\n")
	// A FUNCTION RESTORE payload lockproxy cannot read, with a wrong
	// checksum, is never sent: answered as Valkey answers it.
	junk := "\xf5\xffnot a payload at all"
	eq(t, stranger.do("FUNCTION", "RESTORE", junk), "-"+d.Do(ctx, "FUNCTION", "RESTORE", junk).Err().Error()+"\r\n")
	eq(t, stranger.do("FUNCTION", "RESTORE", junk, "REPLACE"), "-"+d.Do(ctx, "FUNCTION", "RESTORE", junk, "REPLACE").Err().Error()+"\r\n")
	eq(t, stranger.do("FUNCTION", "RESTORE", junk, "BAD"), "-"+d.Do(ctx, "FUNCTION", "RESTORE", junk, "BAD").Err().Error()+"\r\n")
}

// COPY ... DB, MOVE and MIGRATE of a lock or a guarded key are refused, as
// inside a script: the fence is checked in the source database, where a
// stranger can take the same lock name for free.
func TestFailClosedCrossDatabase(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: current
      unfenced_writes: reject
`))
	d := e.direct()
	b, a := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, b.do("SET", "{o}:mutex", "B", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, b.do("SET", "{o}:data", "fromB"), "+OK\r\n")
	// The reproduction: A takes the same lock name in db 1.
	eq(t, a.do("SELECT", "1"), "+OK\r\n")
	eq(t, a.do("SET", "{o}:mutex", "A", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, a.do("SET", "{o}:data", "fromA"), "+OK\r\n")
	mustContain(t, a.do("COPY", "{o}:data", "{o}:data", "DB", "0", "REPLACE"), "-LOCKED lockproxy refused COPY")
	mustContain(t, a.do("COPY", "{o}:data", "{o}:data", "replace", "db", "0"), "-LOCKED lockproxy refused COPY")
	mustContain(t, a.do("MOVE", "{o}:data", "0"), "-LOCKED lockproxy refused MOVE")
	mustContain(t, a.do("MOVE", "{o}:mutex", "0"), "-LOCKED lockproxy refused MOVE")
	host, port, _ := strings.Cut(e.srv.Addr, ":")
	mustContain(t, a.do("MIGRATE", host, port, "{o}:data", "0", "5000", "COPY", "REPLACE"), "-LOCKED lockproxy refused MIGRATE")
	mustContain(t, a.do("MIGRATE", host, port, "", "0", "5000", "COPY", "REPLACE", "KEYS", "{o}:x", "{o}:data"), "-LOCKED lockproxy refused MIGRATE")
	eq(t, d.Get(ctx, "{o}:data").Val(), "fromB")
	eq(t, d.Get(ctx, "{o}:mutex").Val(), "B")
	// Keys nobody protects move as Valkey moves them.
	eq(t, a.do("SET", "plain", "p"), "+OK\r\n")
	eq(t, a.do("COPY", "plain", "plain", "DB", "0"), ":1\r\n")
	eq(t, a.do("MOVE", "plain", "2"), ":1\r\n")
	eq(t, d.Get(ctx, "plain").Val(), "p")
}

// The monitor's FLUSHALL probe key is one of lockproxy's own: a client
// cannot plant it, plainly or from a script.
func TestFailClosedFlushProbeIsOwnKey(t *testing.T) {
	e := newEnv(t, rulesOptions(t, failClosedRule))
	d := e.direct()
	c := dialRaw(t, e.addr)
	const probe = "{lockproxy}:lockproxy:flush"
	mustContain(t, c.do("SET", probe, "1"), "-LOCKED lockproxy refused SET on \"{lockproxy}:lockproxy:flush\": it is one of lockproxy's own keys")
	mustContain(t, c.do("EVAL", "return redis.call('SET', KEYS[1], '1')", "1", probe), "-LOCKED")
	mustContain(t, c.do("EVAL", "return redis.call('SET', '{lockproxy}:lockproxy:' .. 'flush', '1')", "0"), "-LOCKED")
	eq(t, d.Exists(ctx, probe).Val(), int64(0))
	eq(t, c.do("GET", probe), "$-1\r\n") // reads pass
}

// The monitor reads a script's SET options as Valkey does: the value of an
// expiry option is never an option (PX NX PX 1 is no NX), and an option is
// read up to a NUL byte ("db\x00" is COPY's DB).
func TestFailClosedScriptOptionsAsValkey(t *testing.T) {
	e := newEnv(t, rulesOptions(t, `locks:
  - pattern: "*:lock"
  - pattern: "{*}:mutex"
    fence:
      counter: "{base}:fence"
      guards: ["{base}:data"]
      check: current
      unfenced_writes: reject
`))
	d := e.direct()
	victim, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")
	got := stranger.do("EVAL", "return redis.call('SET', KEYS[1], 'x', 'PX', 'NX', 'PX', '100000')", "1", "v:lock")
	mustContain(t, got, "-NOTOWNER")
	eq(t, d.Get(ctx, "v:lock").Val(), "victimtoken")

	eq(t, victim.do("SET", "{o}:mutex", "B", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, victim.do("SET", "{o}:data", "fromB"), "+OK\r\n")
	eq(t, stranger.do("SELECT", "1"), "+OK\r\n")
	eq(t, stranger.do("SET", "{o}:mutex", "A", "NX", "PX", "600000"), "+OK\r\n")
	eq(t, stranger.do("SET", "{o}:data", "fromA"), "+OK\r\n")
	mustContain(t, stranger.do("EVAL", "return redis.call('COPY', KEYS[1], KEYS[1], 'db\\0', '0', 'REPLACE')", "1", "{o}:data"), "-LOCKED")
	mustContain(t, stranger.do("COPY", "{o}:data", "{o}:data", "db\x00", "0", "REPLACE"), "-LOCKED")
	eq(t, d.Get(ctx, "{o}:data").Val(), "fromB")
}

// A write whose keys only Valkey can list (SORT ... STORE, MIGRATE ...
// KEYS, a command lockproxy's table lacks) is decided on the keys Valkey
// lists; when Valkey cannot be asked, it is refused, not forwarded.
func TestFailClosedKeysOnlyValkeyKnows(t *testing.T) {
	t.Run("store-nul", func(t *testing.T) {
		e := newEnv(t, rulesOptions(t, failClosedRule))
		d := e.direct()
		victim, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, stranger.do("RPUSH", "src", "1"), ":1\r\n")
		// Valkey's SORT reads "STORE\x00x" as STORE.
		mustContain(t, stranger.do("SORT", "src", "STORE\x00x", "v:lock"), "-LOCKED")
		eq(t, d.Get(ctx, "v:lock").Val(), "victimtoken")
		// A command Valkey does not have either: its own error, as it came.
		eq(t, stranger.do("NOSUCHCOMMAND", "v:lock"), "-"+d.Do(ctx, "NOSUCHCOMMAND", "v:lock").Err().Error()+"\r\n")
	})
	t.Run("getkeys-refused", func(t *testing.T) {
		srv := valkeytest.Start(t)
		const pw = "failclosed-pw"
		if _, err := valkeytest.Do(srv.Addr, "ACL", "SETUSER", "lockproxy", "on", ">"+pw, "~*", "&*", "+@all", "-command|getkeysandflags"); err != nil {
			t.Fatal(err)
		}
		e := &env{t: t, srv: srv}
		opts := rulesOptions(t, failClosedRule)
		opts.Upstream.Username, opts.Upstream.Password = "lockproxy", pw
		e.startProxy(opts)
		d := e.direct()
		victim, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
		eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")
		eq(t, stranger.do("RPUSH", "src", "1"), ":1\r\n")
		mustContain(t, stranger.do("SORT", "src", "STORE", "v:lock"), "-UNSUPPORTED lockproxy refused SORT: only Valkey can list the keys it writes")
		eq(t, d.Get(ctx, "v:lock").Val(), "victimtoken")
	})
}

// SCRIPT DEBUG's mode is read as Valkey reads it (a C string): "YES\x00x"
// turns the unchecked Lua debugger on as YES does, and is refused as YES is.
func TestFailClosedScriptDebugMode(t *testing.T) {
	e := newEnv(t, rulesOptions(t, failClosedRule))
	c := dialRaw(t, e.addr)
	mustContain(t, c.do("SCRIPT", "DEBUG", "YES\x00x"), "-LOCKED lockproxy refused SCRIPT DEBUG")
	mustContain(t, c.do("SCRIPT", "DEBUG", "sync\x00"), "-LOCKED lockproxy refused SCRIPT DEBUG")
}

// A stranger's SET of a held lock, with every list of up to three option
// words from a pool (repeats, cases, values that look like options, bad
// numbers, NUL bytes), sent plainly and from a script, never changes the
// lock: its value and its lease stay the victim's.
func TestFailClosedSetOptionListsOnHeldLock(t *testing.T) {
	e := newEnv(t, rulesOptions(t, failClosedRule))
	d := e.direct()
	victim, stranger := dialRaw(t, e.addr), dialRaw(t, e.addr)
	eq(t, victim.do("SET", "v:lock", "victimtoken", "NX", "PX", "600000"), "+OK\r\n")
	words := []string{"NX", "xx", "GET", "keepttl", "PX", "ex", "PXAT", "EXAT", "100", "abc", "nx\x00", "PX\x00"}
	var lists [][]string
	var gen func(prefix []string, n int)
	gen = func(prefix []string, n int) {
		lists = append(lists, append([]string(nil), prefix...))
		if n == 0 {
			return
		}
		for _, w := range words {
			gen(append(prefix, w), n-1)
		}
	}
	gen(nil, 3)
	const script = "return redis.pcall('SET', KEYS[1], 'x', unpack(ARGV))"
	for _, l := range lists {
		for _, viaScript := range []bool{false, true} {
			if viaScript {
				stranger.do(append([]string{"EVAL", script, "1", "v:lock"}, l...)...)
			} else {
				stranger.do(append([]string{"SET", "v:lock", "x"}, l...)...)
			}
			if v := d.Get(ctx, "v:lock").Val(); v != "victimtoken" {
				t.Fatalf("SET v:lock x %q (script %v) from a stranger: the lock holds %q", l, viaScript, v)
			}
			if ttl := d.PTTL(ctx, "v:lock").Val().Milliseconds(); ttl < 500000 {
				t.Fatalf("SET v:lock x %q (script %v) from a stranger: the lock's lease is %d ms", l, viaScript, ttl)
			}
		}
	}
	t.Logf("%d option lists, plain and scripted: the held lock unchanged", len(lists))
	eq(t, victim.do("DEL", "v:lock"), ":1\r\n")
}
