package keyspec

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// The tests in this file load the command table from real servers and
// compare Keys with the server's own COMMAND GETKEYSANDFLAGS for the same
// arguments. They run against $LOCKPROXY_TEST_SERVER (default valkey-server)
// and, when it is installed and not already the default, redis-server 7.

type serverEnv struct {
	srv  *valkeytest.Server
	rdb2 *redis.Client // RESP2
	rdb3 *redis.Client // RESP3
	tab  *Table        // loaded through rdb2
}

func newClient(t *testing.T, addr string, proto int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:     addr,
		Protocol: proto,
		// Redis 7.0 has no CLIENT SETINFO; skipping it keeps its log clean.
		DisableIdentity: true,
		PoolSize:        2,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// forEachServer runs f once per server binary, each with its own server
// shared by f's subtests.
func forEachServer(t *testing.T, f func(t *testing.T, env *serverEnv)) {
	run := func(t *testing.T) {
		srv := valkeytest.Start(t)
		env := &serverEnv{srv: srv, rdb2: newClient(t, srv.Addr, 2), rdb3: newClient(t, srv.Addr, 3)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if env.tab, err = Load(ctx, env.rdb2); err != nil {
			t.Fatal(err)
		}
		f(t, env)
	}
	t.Run(valkeytest.Binary(), run)
	if valkeytest.Binary() == "redis-server" {
		return
	}
	t.Run("redis-server", func(t *testing.T) {
		if _, err := exec.LookPath("redis-server"); err != nil {
			t.Skip("redis-server not installed; Redis 7 not covered")
		}
		t.Setenv("LOCKPROXY_TEST_SERVER", "redis-server")
		run(t)
	})
}

// answer is the server's view of one argument vector.
type answer struct {
	keys []KeyWithFlags
	err  error // a server error reply (redis.Error)
}

// askServer sends COMMAND GETKEYSANDFLAGS for every vector, pipelined.
func askServer(t *testing.T, rdb *redis.Client, vectors [][]string) []answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make([]answer, 0, len(vectors))
	const batch = 500
	for start := 0; start < len(vectors); start += batch {
		end := min(start+batch, len(vectors))
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, 0, end-start)
		for _, v := range vectors[start:end] {
			a := make([]interface{}, 0, len(v)+2)
			a = append(a, "COMMAND", "GETKEYSANDFLAGS")
			for _, s := range v {
				a = append(a, s)
			}
			cmds = append(cmds, pipe.Do(ctx, a...))
		}
		_, _ = pipe.Exec(ctx)
		for i, c := range cmds {
			v, err := c.Slice()
			if err != nil {
				var rerr redis.Error
				if !errors.As(err, &rerr) {
					t.Fatalf("%q: not a server reply: %v", vectors[start+i], err)
				}
				out = append(out, answer{err: err})
				continue
			}
			keys, err := GetKeysAndFlags(v)
			if err != nil {
				t.Fatalf("%q: %v", vectors[start+i], err)
			}
			out = append(out, answer{keys: keys})
		}
	}
	return out
}

func toBytes(v []string) [][]byte {
	out := make([][]byte, len(v))
	for i, s := range v {
		out[i] = []byte(s)
	}
	return out
}

// movableCase reports whether c is one of the commands whose keys the specs
// cannot always resolve: movable keys, or a spec that is incomplete or of
// unknown type.
func movableCase(c *Command) bool {
	if c == nil {
		return false
	}
	if c.Flags&MovableKeys != 0 {
		return true
	}
	for _, s := range c.KeySpecs {
		if s.Flags&KeyIncomplete != 0 || s.BeginSearch.Type == BeginSearchUnknown || s.FindKeys.Type == FindKeysUnknown {
			return true
		}
	}
	return false
}

// emptyRange reports whether some spec of c has an empty range for args
// (a keynum count of 0, or a range ending just before its first key): the
// one case where Keys deliberately differs from the server's spec walk
// (see Command.Keys).
func emptyRange(c *Command, args []string) bool {
	if c == nil {
		return false
	}
	for i := range c.KeySpecs {
		one := *c
		one.KeySpecs = c.KeySpecs[i : i+1]
		one.hasKeySpec, one.varFlags = true, false
		// With only this spec, an empty range is "OK, no keys" while a
		// non-empty one finds keys or is unusable.
		if keys, st := one.Keys(toBytes(args), nil); st == OK && len(keys) == 0 && c.KeySpecs[i].Flags&KeyNotKey == 0 &&
			c.KeySpecs[i].BeginSearch.Type == BeginSearchIndex {
			return true
		}
	}
	return false
}

// verdict compares Keys' answer with the server's. problem is non-empty
// when they disagree in a way the package does not document; note
// describes a documented or harmless difference worth reporting.
type verdict struct {
	problem, note string
}

func judge(tab *Table, args []string, st Status, mine []Key, srv answer) verdict {
	c := tab.Command(toBytes(args))
	names := make([]string, len(mine))
	for i, k := range mine {
		names[i] = args[k.Index]
	}
	if srv.err != nil {
		msg := srv.err.Error()
		switch {
		case strings.Contains(msg, "Invalid command specified"):
			if st != UnknownCommand {
				return verdict{problem: fmt.Sprintf("server: %s; Keys: %v", msg, st)}
			}
		case strings.Contains(msg, "Invalid number of arguments"):
			if st != ArityError {
				return verdict{problem: fmt.Sprintf("server: %s; Keys: %v", msg, st)}
			}
		case strings.Contains(msg, "wrong number of arguments for 'command|getkeys"):
			// Redis 7.0's GETKEYSANDFLAGS needs an argument after the
			// command name; a lone name has no keys anyway.
			if len(mine) != 0 {
				return verdict{problem: fmt.Sprintf("server cannot answer; Keys found %v", names)}
			}
		case strings.Contains(msg, "has no key arguments"):
			// Checked before the arity by the server.
			if len(mine) != 0 || (st != OK && st != ArityError) {
				return verdict{problem: fmt.Sprintf("server: no keys; Keys: %v %v", st, names)}
			}
		case strings.Contains(msg, "Invalid arguments specified"):
			switch {
			case st == NeedsGetKeys:
				if !movableCase(c) {
					return verdict{problem: "NeedsGetKeys for a command without movable keys"}
				}
			case len(mine) == 0 && (st == OK || st == VariableFlags):
			case st == OK && emptyRange(c, args):
				return verdict{note: fmt.Sprintf("empty range: Keys %v, server finds none", names)}
			default:
				return verdict{problem: fmt.Sprintf("server: %s; Keys: %v %v", msg, st, names)}
			}
		default:
			return verdict{problem: "unexpected server error: " + msg}
		}
		return verdict{}
	}
	srvNames := make([]string, len(srv.keys))
	for i, k := range srv.keys {
		srvNames[i] = k.Key
	}
	switch st {
	case UnknownCommand, ArityError:
		return verdict{problem: fmt.Sprintf("Keys: %v; server found %v", st, srvNames)}
	case NeedsGetKeys:
		if !movableCase(c) {
			return verdict{problem: "NeedsGetKeys for a command without movable keys"}
		}
		if !reflect.DeepEqual(names, srvNames) {
			return verdict{note: fmt.Sprintf("NeedsGetKeys: specs found %v, server %v", names, srvNames)}
		}
		return verdict{}
	}
	if !reflect.DeepEqual(names, srvNames) {
		return verdict{problem: fmt.Sprintf("%v keys %v, server %v", st, names, srvNames)}
	}
	for i, k := range mine {
		sf := srv.keys[i].Flags
		if st == OK {
			if k.Flags != sf {
				return verdict{problem: fmt.Sprintf("key %s: flags %v, server %v", names[i], k.Flags, sf)}
			}
			continue
		}
		// VariableFlags: the declared flags must be at least as strong as
		// the real ones for every helper lockproxy uses.
		if (sf.Writes() && !k.Flags.Writes()) || (sf.Overwrites() && !k.Flags.Overwrites()) ||
			(sf.Deletes() && !k.Flags.Deletes()) || (k.Flags.ReadOnly() && !sf.ReadOnly()) {
			return verdict{problem: fmt.Sprintf("key %s: declared %v weaker than server's %v", names[i], k.Flags, sf)}
		}
		if k.Flags&^KeyVariableFlags != sf {
			return verdict{note: fmt.Sprintf("variable flags: declared %v, server %v", k.Flags, sf)}
		}
	}
	return verdict{}
}

// semantics summarises a key's flags for lockproxy: D deletes, O
// overwrites, W writes otherwise, R read-only.
func semantics(f KeyFlags) string {
	switch {
	case f.Deletes():
		return "D"
	case f.Overwrites():
		return "O"
	case f.Writes():
		return "W"
	case f.ReadOnly():
		return "R"
	}
	return "?"
}

func TestLoadRESP2AndRESP3(t *testing.T) {
	forEachServer(t, func(t *testing.T, env *serverEnv) {
		ctx := context.Background()
		t3, err := Load(ctx, env.rdb3)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(env.tab, t3) {
			for name, c2 := range env.tab.cmds {
				if !reflect.DeepEqual(c2, t3.cmds[name]) {
					t.Errorf("%s differs:\nRESP2 %+v\nRESP3 %+v", name, c2, t3.cmds[name])
				}
			}
			t.Fatal("RESP2 and RESP3 tables differ")
		}
		if env.tab.Len() < 200 {
			t.Fatalf("only %d commands", env.tab.Len())
		}
		// COMMAND INFO has the same shape (plus nils for unknown names).
		info, err := env.rdb3.Do(ctx, "COMMAND", "INFO", "get", "client", "nosuchcommand").Slice()
		if err != nil {
			t.Fatal(err)
		}
		ti, err := FromCommandReply(info)
		if err != nil {
			t.Fatal(err)
		}
		if ti.Len() != 2 || !reflect.DeepEqual(ti.LookupString("client"), env.tab.LookupString("client")) {
			t.Fatalf("COMMAND INFO table: %d commands", ti.Len())
		}
		for _, name := range []string{"client|tracking", "client|kill", "object|encoding", "xinfo|stream",
			"function|load", "script|flush", "config|set", "xgroup|create"} {
			c := env.tab.LookupString(strings.ToUpper(name))
			if c == nil || c.Name != name || c.Parent == nil {
				t.Errorf("%s: %+v", name, c)
			}
		}
		get := env.tab.LookupString("get")
		if get.Arity != 2 || !get.Flags.Has(Readonly|Fast) || get.Flags&Write != 0 || !get.InCategory("@read") ||
			len(get.KeySpecs) != 1 || get.KeySpecs[0].Flags != KeyRO|KeyAccess {
			t.Errorf("get: %+v", get)
		}
		if c := env.tab.LookupString("blpop"); !c.Flags.Has(Write | Blocking) {
			t.Errorf("blpop flags %v", c.Flags)
		}
		if c := env.tab.LookupString("subscribe"); !c.Flags.Has(Pubsub | Noscript) {
			t.Errorf("subscribe flags %v", c.Flags)
		}
		if c := env.tab.LookupString("config|set"); !c.Flags.Has(Admin) {
			t.Errorf("config|set flags %v", c.Flags)
		}
		if c := env.tab.LookupString("multi"); !c.Flags.Has(Noscript | Loading | Stale | Fast) {
			t.Errorf("multi flags %v", c.Flags)
		}
	})
}

type concreteCase struct {
	args    string // space-separated; "" stands for an empty argument
	st      Status
	keys    string // expected key names, space-separated
	sem     string // expected semantics() per key, space-separated
	expiry  bool   // Command.ExpiryOnly
	keyless bool   // Command.KeylessWrite
}

var concreteCases = []concreteCase{
	{args: "DEL a b c", st: OK, keys: "a b c", sem: "D D D"},
	{args: "del a", st: OK, keys: "a", sem: "D"},
	{args: "UNLINK a b", st: OK, keys: "a b", sem: "D D"},
	{args: "SET k v NX PX 100", st: VariableFlags, keys: "k", sem: "O"},
	{args: "SET k v GET", st: VariableFlags, keys: "k", sem: "O"},
	{args: "SET k v KEEPTTL XX", st: VariableFlags, keys: "k", sem: "O"},
	{args: "SETNX k v", st: OK, keys: "k", sem: "O"},
	{args: "GETSET k v", st: OK, keys: "k", sem: "O"},
	{args: "GETDEL k", st: OK, keys: "k", sem: "D"},
	{args: "GETEX k PX 1", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "GETEX k PERSIST", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "EXPIRE k 10", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "EXPIRE k 10 NX", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "PEXPIRE k 100", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "EXPIREAT k 1", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "PEXPIREAT k 1", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "PERSIST k", st: OK, keys: "k", sem: "O", expiry: true},
	{args: "RENAME a b", st: OK, keys: "a b", sem: "D O"},
	{args: "RENAMENX a b", st: OK, keys: "a b", sem: "D O"},
	{args: "MOVE k 1", st: OK, keys: "k", sem: "O"},
	{args: "COPY a b REPLACE", st: OK, keys: "a b", sem: "R O"},
	{args: "COPY a b DB 1", st: OK, keys: "a b", sem: "R O"},
	{args: "RESTORE k 0 payload REPLACE", st: OK, keys: "k", sem: "O"},
	{args: "MSET a 1 b 2", st: OK, keys: "a b", sem: "O O"},
	{args: "MSETNX a 1 b 2", st: OK, keys: "a b", sem: "O O"},
	{args: "APPEND k x", st: OK, keys: "k", sem: "O"},
	{args: "INCR k", st: OK, keys: "k", sem: "O"},
	{args: "HSET h f v", st: OK, keys: "h", sem: "O"},
	{args: "HDEL h f", st: OK, keys: "h", sem: "D"},
	{args: "LMOVE a b LEFT RIGHT", st: OK, keys: "a b", sem: "D O"},
	{args: "BLMOVE a b LEFT RIGHT 0", st: OK, keys: "a b", sem: "D O"},
	{args: "RPOPLPUSH a b", st: OK, keys: "a b", sem: "D O"},
	{args: "BRPOPLPUSH a b 0", st: OK, keys: "a b", sem: "D O"},
	{args: "SMOVE a b m", st: OK, keys: "a b", sem: "D O"},
	{args: "BLPOP a b 0", st: OK, keys: "a b", sem: "D D"},
	{args: "LMPOP 2 a b LEFT", st: OK, keys: "a b", sem: "D D"},
	{args: "BLMPOP 0 2 a b LEFT COUNT 1", st: OK, keys: "a b", sem: "D D"},
	{args: "BZMPOP 0 1 z MIN", st: OK, keys: "z", sem: "D"},
	{args: "SORT k STORE d", st: NeedsGetKeys, keys: "", sem: ""},
	{args: "SORT k BY w GET g", st: NeedsGetKeys, keys: "", sem: ""},
	{args: "SORT_RO k", st: NeedsGetKeys, keys: "", sem: ""},
	{args: "EVAL s 2 k1 k2 a", st: OK, keys: "k1 k2", sem: "O O"},
	{args: "EVAL s 0", st: OK},
	{args: "EVAL s 0 a b", st: OK},
	{args: "EVALSHA sha 1 k", st: OK, keys: "k", sem: "O"},
	{args: "EVAL_RO s 1 k", st: OK, keys: "k", sem: "R"},
	{args: "EVALSHA_RO sha 1 k", st: OK, keys: "k", sem: "R"},
	{args: "FCALL f 1 k a", st: OK, keys: "k", sem: "O"},
	{args: "FCALL_RO f 2 a b", st: OK, keys: "a b", sem: "R R"},
	{args: "EVAL s 3 a b", st: NeedsGetKeys},
	{args: "EVAL s x k", st: NeedsGetKeys},
	{args: "EVAL s -1 k", st: NeedsGetKeys},
	{args: "EVAL s 4294967297 k", st: OK, keys: "k", sem: "O"},
	{args: "XREAD STREAMS s1 s2 0 0", st: OK, keys: "s1 s2", sem: "R R"},
	{args: "xread streams s 0", st: OK, keys: "s", sem: "R"},
	{args: "XREAD COUNT 1 BLOCK 0 STREAMS s1 0", st: OK, keys: "s1", sem: "R"},
	{args: "XREAD STREAMS s1 s2 0", st: OK, keys: "s1", sem: "R"},
	{args: "XREAD COUNT 1 STREAMS", st: OK},
	{args: "XREAD STREAMS STREAMS s 0", st: OK, keys: "STREAMS", sem: "R"}, // the first STREAMS is the keyword
	{args: "XREAD COUNT 1 STREAMS s", st: OK},
	{args: "PFMERGE d", st: OK, keys: "d", sem: "O"},
	{args: "ZUNIONSTORE d 0 a", st: OK, keys: "d", sem: "O"},
	{args: "LMPOP 0 a LEFT", st: OK},
	{args: "XREADGROUP GROUP g c STREAMS s 0", st: OK, keys: "s", sem: "R"},
	{args: "XREADGROUP GROUP g c COUNT 1 NOACK STREAMS s1 s2 > >", st: OK, keys: "s1 s2", sem: "R R"},
	{args: "ZUNIONSTORE d 2 a b", st: OK, keys: "d a b", sem: "O R R"},
	{args: "ZUNIONSTORE d 2 a b WEIGHTS 1 2", st: OK, keys: "d a b", sem: "O R R"},
	{args: "ZINTERSTORE d 1 a", st: OK, keys: "d a", sem: "O R"},
	{args: "ZINTERCARD 2 a b LIMIT 1", st: OK, keys: "a b", sem: "R R"},
	{args: "SINTERCARD 1 a", st: OK, keys: "a", sem: "R"},
	{args: "ZDIFFSTORE d 1 a", st: OK, keys: "d a", sem: "O R"},
	{args: "SINTERSTORE d a b", st: OK, keys: "d a b", sem: "O R R"},
	{args: "GEORADIUS k 0 0 1 km STORE d", st: OK, keys: "k d", sem: "R O"},
	{args: "GEORADIUS k 0 0 1 km STOREDIST d", st: OK, keys: "k d", sem: "R O"},
	{args: "GEORADIUS k 0 0 1 km WITHDIST", st: OK, keys: "k", sem: "R"},
	{args: "GEORADIUSBYMEMBER k m 1 km STORE d", st: OK, keys: "k d", sem: "R O"},
	{args: "GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km", st: OK, keys: "d s", sem: "O R"},
	{args: `MIGRATE 127.0.0.1 6379 "" 0 5000 KEYS a b`, st: NeedsGetKeys},
	{args: "MIGRATE 127.0.0.1 6379 k 0 5000", st: OK, keys: "k", sem: "D"},
	{args: "MIGRATE 127.0.0.1 6379 k 0 5000 COPY REPLACE", st: OK, keys: "k", sem: "D"},
	{args: "OBJECT ENCODING k", st: OK, keys: "k", sem: "R"},
	{args: "object freq k", st: OK, keys: "k", sem: "R"},
	{args: "OBJECT HELP", st: OK},
	{args: "XINFO STREAM s", st: OK, keys: "s", sem: "R"},
	{args: "XGROUP CREATE s g $ MKSTREAM", st: OK, keys: "s", sem: "O"},
	{args: "MEMORY USAGE k", st: OK, keys: "k", sem: "R"},
	{args: "CLIENT KILL ID 1", st: OK},
	{args: "CLIENT TRACKING on", st: OK},
	{args: "CLIENT", st: ArityError},
	{args: "CLIENT NOSUCH", st: UnknownCommand},
	{args: "PING", st: OK},
	{args: "PING hello", st: OK},
	{args: "BITFIELD k GET u8 0", st: VariableFlags, keys: "k", sem: "O"},
	{args: "BITFIELD k SET u8 0 1", st: VariableFlags, keys: "k", sem: "O"},
	{args: "SPUBLISH ch m", st: OK},
	{args: "PUBLISH ch m", st: OK},
	{args: "SSUBSCRIBE ch", st: OK},
	{args: "FUNCTION LOAD code", st: OK, keyless: true},
	{args: "FUNCTION FLUSH", st: OK, keyless: true},
	{args: "FLUSHALL", st: OK, keyless: true},
	{args: "FLUSHDB ASYNC", st: OK, keyless: true},
	{args: "SWAPDB 0 1", st: OK, keyless: true},
	{args: "WATCH a b", st: OK, keys: "a b", sem: "R R"},
	{args: "EXISTS a b", st: OK, keys: "a b", sem: "R R"},
	{args: "TOUCH a", st: OK, keys: "a", sem: "R"},
	{args: "PFCOUNT a b", st: OK, keys: "a b", sem: "W W"},
	{args: "PFMERGE d a", st: OK, keys: "d a", sem: "O R"},
	{args: "GET k", st: OK, keys: "k", sem: "R"},
	{args: "gEt k", st: OK, keys: "k", sem: "R"},
	{args: "DUMP k", st: OK, keys: "k", sem: "R"},
	{args: "LCS a b", st: OK, keys: "a b", sem: "R R"},
	{args: "XAUTOCLAIM s g c 0 0", st: OK, keys: "s", sem: "D"},
	{args: "GET", st: ArityError},
	{args: "GET a b", st: ArityError},
	{args: "DEL", st: ArityError},
	{args: "NOSUCHCOMMAND a", st: UnknownCommand},
	{args: "MULTI", st: OK},
	{args: "EXEC", st: OK},
}

func TestConcreteCommands(t *testing.T) {
	forEachServer(t, func(t *testing.T, env *serverEnv) {
		vectors := make([][]string, len(concreteCases))
		for i, tc := range concreteCases {
			vectors[i] = strings.Fields(tc.args)
			for j, a := range vectors[i] {
				if a == `""` {
					vectors[i][j] = ""
				}
			}
		}
		for _, rdb := range []*redis.Client{env.rdb2, env.rdb3} {
			answers := askServer(t, rdb, vectors)
			for i, tc := range concreteCases {
				args := vectors[i]
				mine, st := env.tab.Keys(toBytes(args), nil)
				var names, sems []string
				for _, k := range mine {
					names = append(names, args[k.Index])
					sems = append(sems, semantics(k.Flags))
				}
				if st != tc.st {
					t.Errorf("%s: status %v, want %v", tc.args, st, tc.st)
				}
				if st != NeedsGetKeys {
					if got := strings.Join(names, " "); got != tc.keys {
						t.Errorf("%s: keys %q, want %q", tc.args, got, tc.keys)
					}
					if got := strings.Join(sems, " "); got != tc.sem {
						t.Errorf("%s: semantics %q, want %q", tc.args, got, tc.sem)
					}
				}
				if c := env.tab.Command(toBytes(args)); c != nil {
					if c.ExpiryOnly() != tc.expiry || c.KeylessWrite() != tc.keyless {
						t.Errorf("%s: ExpiryOnly %v KeylessWrite %v", tc.args, c.ExpiryOnly(), c.KeylessWrite())
					}
				}
				v := judge(env.tab, args, st, mine, answers[i])
				if v.problem != "" {
					t.Errorf("%s: %s", tc.args, v.problem)
				} else if v.note != "" && rdb == env.rdb2 {
					t.Logf("%s: %s", tc.args, v.note)
				}
			}
		}
		// The keynum-0 case where Keys reports ZUNIONSTORE's destination
		// and the server's key finder reports nothing: the command indeed
		// fails, so the destination is never written.
		ctx := context.Background()
		if err := env.rdb2.Do(ctx, "ZUNIONSTORE", "d", "0", "a").Err(); err == nil {
			t.Error("ZUNIONSTORE d 0 a succeeded")
		}
		if n, _ := env.rdb2.Exists(ctx, "d").Result(); n != 0 {
			t.Error("ZUNIONSTORE d 0 a created d")
		}
		// PFMERGE with no source keys does write its destination, which
		// the server's own key extraction misses and Keys reports.
		if err := env.rdb2.Do(ctx, "PFMERGE", "pfdest").Err(); err != nil {
			t.Fatal(err)
		}
		if n, _ := env.rdb2.Exists(ctx, "pfdest").Result(); n != 1 {
			t.Error("PFMERGE pfdest did not create pfdest")
		}
	})
}

// TestKeywordNULAgainstServer checks that the server, too, matches a
// keyword up to an embedded NUL (it compares C strings).
func TestKeywordNULAgainstServer(t *testing.T) {
	forEachServer(t, func(t *testing.T, env *serverEnv) {
		args := []string{"XREAD", "STREAMS\x00junk", "s", "0"}
		mine, st := env.tab.Keys(toBytes(args), nil)
		ans := askServer(t, env.rdb2, [][]string{args})
		if v := judge(env.tab, args, st, mine, ans[0]); v.problem != "" || st != OK || len(mine) != 1 {
			t.Fatalf("%v %v %+v %+v", st, mine, ans[0], v)
		}
	})
}

// vectorsFor synthesises argument vectors for c: every arity-valid length
// from the minimum up to a few more, one invalid length, and variants that
// put a keynum count or a keyword at each place its spec may look.
func vectorsFor(c *Command) [][]string {
	prefix := []string{c.Name}
	if c.Parent != nil {
		prefix = []string{c.Parent.Name, c.SubcommandName()}
	}
	var lengths []int
	if c.Arity > 0 {
		lengths = []int{c.Arity, c.Arity + 1}
	} else {
		n := -c.Arity
		lengths = []int{n - 1, n, n + 1, n + 2, n + 3, n + 5}
	}
	seen := map[string]bool{}
	var out [][]string
	add := func(v []string) {
		k := strings.Join(v, "\x01")
		if !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	for _, n := range lengths {
		if n < len(prefix) || n < 1 {
			continue
		}
		base := make([]string, n)
		copy(base, prefix)
		for i := len(prefix); i < n; i++ {
			base[i] = "a" + strconv.Itoa(i)
		}
		add(base)
		for _, s := range c.KeySpecs {
			switch {
			case s.FindKeys.Type == FindKeysKeynum && s.BeginSearch.Type == BeginSearchIndex:
				at := s.BeginSearch.Index + s.FindKeys.KeyNumIdx
				if at < len(prefix) || at >= n {
					continue
				}
				for _, cnt := range []string{"0", "1", "2", "3", "-1"} {
					v := append([]string(nil), base...)
					v[at] = cnt
					add(v)
				}
			case s.BeginSearch.Type == BeginSearchKeyword:
				for p := len(prefix); p < n; p++ {
					v := append([]string(nil), base...)
					v[p] = s.BeginSearch.Keyword
					if p%2 == 1 {
						v[p] = strings.ToLower(v[p])
					}
					add(v)
				}
			}
		}
	}
	return out
}

// TestEveryCommand is the property test: for every command and subcommand
// in the server's table, synthesised arguments get the same keys and flags
// from Keys as from the server, except where Status says to ask it.
func TestEveryCommand(t *testing.T) {
	forEachServer(t, func(t *testing.T, env *serverEnv) {
		var all []*Command
		env.tab.Commands(func(c *Command) bool {
			all = append(all, c)
			for _, s := range c.Subcommands {
				all = append(all, s)
			}
			return true
		})
		sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
		var vectors [][]string
		for _, c := range all {
			vectors = append(vectors, vectorsFor(c)...)
		}
		answers := askServer(t, env.rdb2, vectors)
		stats := map[Status]int{}
		withKeys := 0
		notes := map[string]int{}
		examples := map[string]string{}
		needs := map[string]int{}
		specCmds := map[string]bool{}
		for i, args := range vectors {
			mine, st := env.tab.Keys(toBytes(args), nil)
			stats[st]++
			if len(mine) > 0 {
				withKeys++
			}
			v := judge(env.tab, args, st, mine, answers[i])
			if v.problem != "" {
				t.Errorf("%q: %s", args, v.problem)
			}
			if v.note != "" {
				// Group by command and kind of note, keeping one example.
				c := env.tab.Command(toBytes(args))
				kind, _, _ := strings.Cut(v.note, ":")
				key := c.Name + ": " + kind
				if notes[key] == 0 {
					examples[key] = fmt.Sprintf("%q: %s", args, v.note)
				}
				notes[key]++
			}
			if st == NeedsGetKeys {
				needs[env.tab.Command(toBytes(args)).Name]++
			}
			if c := env.tab.Command(toBytes(args)); c != nil && c.hasKeySpec {
				specCmds[c.Name] = true
			}
		}
		t.Logf("%d commands (with subcommands), %d with key specs; %d argument vectors compared, %d with keys; statuses %v",
			len(all), len(specCmds), len(vectors), withKeys, stats)
		t.Logf("NeedsGetKeys by command: %v", needs)
		var ns []string
		for n, cnt := range notes {
			ns = append(ns, fmt.Sprintf("%s (x%d), e.g. %s", n, cnt, examples[n]))
		}
		sort.Strings(ns)
		for _, n := range ns {
			t.Logf("note: %s", n)
		}
		if len(specCmds) < 150 || stats[OK] < 1000 {
			t.Errorf("too little coverage: %d spec commands, %d OK vectors", len(specCmds), stats[OK])
		}
	})
}

// TestKeysAllocFree checks the hot path's promise with the real table.
func TestKeysAllocFree(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	forEachServer(t, func(t *testing.T, env *serverEnv) {
		dst := make([]Key, 0, 8)
		for _, args := range [][][]byte{
			argv("DEL lock:1"), argv("SET lock:1 token NX PX 30000"), argv("get lock:1"),
			argv("EVAL s 1 lock:1 token"), argv("XREAD COUNT 1 STREAMS s 0"), argv("CLIENT TRACKING on"),
			argv("OBJECT ENCODING k"),
		} {
			n := testing.AllocsPerRun(200, func() {
				dst, _ = env.tab.Keys(args, dst[:0])
			})
			if n != 0 {
				t.Errorf("%s: %v allocs", args[0], n)
			}
		}
		n := testing.AllocsPerRun(200, func() {
			_ = env.tab.Lookup([]byte("CLIENT|TRACKING"))
			_ = env.tab.LookupString("getex")
		})
		if n != 0 {
			t.Errorf("Lookup: %v allocs", n)
		}
	})
}

// TestUpperNames: every command's Upper is its name in upper case, and a
// subcommand's is its container's, as the client typed the first word.
func TestUpperNames(t *testing.T) {
	forEachServer(t, func(t *testing.T, env *serverEnv) {
		n := 0
		env.tab.Commands(func(c *Command) bool {
			if c.Upper != strings.ToUpper(c.Name) {
				t.Errorf("%s: Upper %q", c.Name, c.Upper)
			}
			for _, s := range c.Subcommands {
				if s.Upper != c.Upper {
					t.Errorf("%s: Upper %q, want its container's %q", s.Name, s.Upper, c.Upper)
				}
			}
			n++
			return true
		})
		if n < 100 {
			t.Fatalf("only %d commands in the table", n)
		}
		if c := env.tab.Command(toBytes([]string{"client", "kill", "ID", "1"})); c == nil || c.Upper != "CLIENT" {
			t.Errorf("CLIENT KILL: %+v", c)
		}
	})
}
