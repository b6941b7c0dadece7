package e2e_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// TestDifferential sends the same command sequences to one Valkey directly
// and to an identical one through lockproxy, from many concurrent clients,
// pipelined, in RESP2 and RESP3, and compares every reply byte for byte.
//
// It runs once per way the event loop waits for work (eachEngine).
func TestDifferential(t *testing.T) {
	eachEngine(t, differential)
}

func differential(t *testing.T, o proxy.Options) {
	direct := valkeytest.Start(t)
	o.Upstream.PoolSize = 2
	e := newEnv(t, o)
	const clients = 16
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cmds := sequence(rand.New(rand.NewSource(int64(c))), fmt.Sprintf("c%d:", c), c%2 == 1)
			want := replay(t, direct.Addr, cmds)
			got := replay(t, e.addr, cmds)
			if len(got) != len(want) {
				errs <- fmt.Sprintf("client %d: %d replies through the proxy, %d direct", c, len(got), len(want))
				return
			}
			for i := range want {
				if cmds[i].skipCompare {
					continue
				}
				if !bytes.Equal(got[i], want[i]) {
					errs <- fmt.Sprintf("client %d command %d %q:\n proxy:  %.200q\n direct: %.200q", c, i, cmds[i].args, got[i], want[i])
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

type diffCmd struct {
	args        []string
	skipCompare bool // the reply differs by nature (HELLO names the connection id)
}

// sequence is one client's commands: strings, hashes, lists, sets, sorted
// sets, scripts returning nested tables, nils, errors, binary and large
// values, in an order fixed by the seed.
func sequence(rng *rand.Rand, p string, resp3 bool) []diffCmd {
	var out []diffCmd
	add := func(args ...string) { out = append(out, diffCmd{args: args}) }
	if resp3 {
		out = append(out, diffCmd{args: []string{"HELLO", "3"}, skipCompare: true})
	}
	bin := string([]byte{0, 1, 2, '\r', '\n', 255, '$', '*'})
	big := strings.Repeat("x", 1<<20)
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("%sk%d", p, rng.Intn(8))
		switch rng.Intn(22) {
		case 0:
			add("SET", k, fmt.Sprint(rng.Int()))
		case 1:
			add("GET", k)
		case 2:
			add("INCR", k)
		case 3:
			add("HSET", k+"h", "f"+fmt.Sprint(rng.Intn(4)), bin)
		case 4:
			add("HGETALL", k+"h")
		case 5:
			add("LPUSH", k+"l", bin, "b")
		case 6:
			add("LRANGE", k+"l", "0", "-1")
		case 7:
			add("SADD", k+"s", "a", "b", fmt.Sprint(rng.Intn(9)))
		case 8:
			// SMEMBERS's order depends on each server's hash seed (Redis 7.0
			// keeps small sets in a hash table): compare sorted.
			add("SORT", k+"s", "ALPHA")
			add("SISMEMBER", k+"s", "a")
		case 9:
			add("ZADD", k+"z", fmt.Sprint(rng.Float64()), "m"+fmt.Sprint(rng.Intn(5)))
		case 10:
			add("ZRANGE", k+"z", "0", "-1", "WITHSCORES")
		case 11:
			add("ZSCORE", k+"z", "m1")
		case 12:
			add("EVAL", "return {1, {2, {3, 'x'}}, 'y', KEYS[1]}", "1", k)
		case 13:
			add("EVAL", "return redis.call('GET', KEYS[1])", "1", k+"missing")
		case 14:
			add("EVAL", "return redis.error_reply('MYERR scripted failure')", "0")
		case 15:
			add("GET", k+"h") // WRONGTYPE after HSET, or nil
		case 16:
			add("NOSUCHCOMMAND", k)
		case 17:
			add("SET", k+"bin", bin)
			add("GET", k+"bin")
		case 18:
			if rng.Intn(10) == 0 {
				add("SET", k+"big", big)
				add("STRLEN", k+"big")
				add("GET", k+"big")
			}
		case 19:
			add("MGET", k, k+"missing", k+"bin")
		case 20:
			add("EXISTS", k, k+"h", k+"missing")
		case 21:
			add("HINCRBYFLOAT", k+"h", "fl", "1.5")
		}
	}
	add("DEL", p+"k0", p+"k1h", p+"k2l")
	return out
}

// replay sends cmds on one connection in pipelined chunks of random size and
// returns every reply's bytes.
func replay(t *testing.T, addr string, cmds []diffCmd) [][]byte {
	r := dialRaw(t, addr)
	var out [][]byte
	for i := 0; i < len(cmds); {
		n := 1 + i%17
		if i+n > len(cmds) {
			n = len(cmds) - i
		}
		var buf []byte
		for _, c := range cmds[i : i+n] {
			buf = resp.AppendCommandStrings(buf, c.args...)
		}
		r.send(string(buf))
		for j := 0; j < n; j++ {
			out = append(out, []byte(r.read()))
		}
		i += n
	}
	return out
}

// step is one command of a scripted sequence and how to compare its reply.
type step struct {
	args []string // nil: send nothing, read the next frame (a MONITOR line)
	// on is the connection the step uses: 0, the sequence's own, or 1 and 2,
	// two more (another client's commands, seen by a MONITOR).
	on int
	// none: the command gets no reply (CLIENT REPLY OFF, SKIP).
	none bool
	// until: send the command again (every 20 ms, for up to a minute)
	// until its reply starts with this (SCRIPT KILL before the script runs
	// gets NOTBUSY).
	until string
	// mask, when set, rewrites both replies before they are compared: for
	// the fields that differ by nature (connection ids, addresses, ages).
	mask func(string) string
}

func cmd(args ...string) step { return step{args: args} }

// seqCase is a named sequence of steps on up to three fresh connections,
// against a server started with directives.
type seqCase struct {
	name       string
	steps      []step
	directives []string
	// valkey8: the proxy answers these itself, as Valkey 8 does (CLIENT
	// INFO's fields, SETINFO, NO-TOUCH, names checked up to a NUL byte);
	// Redis 7.0 answers otherwise, so they are compared against Valkey only.
	valkey8 bool
}

// TestDifferentialSequences runs connection-state sequences — SELECT and
// HELLO argument parsing, RESET, CLIENT introspection, MONITOR, CLIENT
// REPLY, busy scripts, SYNC — against Valkey directly and through the proxy
// (lock rules on), one command at a time, and compares each reply byte for
// byte after masking what differs by nature.
func TestDifferentialSequences(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		for _, sc := range diffSequences {
			t.Run(sc.name, func(t *testing.T) {
				if sc.valkey8 && !strings.Contains(valkeytest.Binary(), "valkey") {
					t.Skipf("the proxy answers as Valkey 8 does; the server is %s", valkeytest.Binary())
				}
				direct := valkeytest.Start(t, sc.directives...)
				opts := rulesOptions(t, rule("rewrite"))
				opts.EventLoops, opts.BusyPoll = o.EventLoops, o.BusyPoll
				opts.Upstream.PoolSize = 1 // every client on one shared connection
				e := newEnv(t, opts, sc.directives...)
				want := runSteps(t, direct.Addr, sc.steps)
				got := runSteps(t, e.addr, sc.steps)
				for i, st := range sc.steps {
					w, g := want[i], got[i]
					if st.mask != nil {
						w, g = st.mask(w), st.mask(g)
					}
					if w != g {
						t.Fatalf("step %d %q:\n proxy:  %q\n direct: %q", i, st.args, g, w)
					}
				}
			})
		}
	})
}

// runSteps sends each step and reads its reply. A step with none reads
// nothing: a reply sent for it would be read, and fail, in its place by the
// next step on that connection.
func runSteps(t *testing.T, addr string, steps []step) []string {
	conns := []*raw{dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)}
	out := make([]string, len(steps))
	for i, st := range steps {
		r := conns[st.on]
		switch {
		case st.args == nil:
			out[i] = r.read()
		case st.until != "":
			deadline := time.Now().Add(time.Minute)
			for {
				r.send(string(redisCmd(st.args...)))
				var err error
				if out[i], err = r.readErr(10 * time.Second); err != nil {
					t.Fatalf("%s: step %d %q: %v", addr, i, st.args, err)
				}
				if strings.HasPrefix(out[i], st.until) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		default:
			r.send(string(redisCmd(st.args...)))
			if !st.none {
				out[i] = r.read()
			}
		}
	}
	return out
}

var diffSequences = []seqCase{
	{name: "select-number-forms", steps: []step{
		cmd("SELECT", "01"), cmd("SET", "seq", "in0"), cmd("SELECT", "+1"), cmd("GET", "seq"),
		cmd("SELECT", "-0"), cmd("SELECT", " 1"), cmd("SELECT", "1 "), cmd("SELECT", "1"),
		cmd("GET", "seq"), cmd("SELECT", "-1"), cmd("SELECT", "00"), cmd("GET", "seq"),
	}},
	{name: "hello-number-forms", steps: []step{
		cmd("HELLO", "03"), cmd("GET", "missing"), cmd("HELLO", "+3"), cmd("GET", "missing"),
		cmd("HELLO", "4"), cmd("HELLO", "3x"), cmd("HELLO", "-3"), cmd("GET", "missing"),
	}},
	{name: "reset-arity", steps: []step{cmd("RESET", "x"), cmd("RESET"), cmd("PING")}},
	{name: "reset-shared", steps: []step{
		cmd("SELECT", "2"), cmd("SET", "r", "in2"), cmd("CLIENT", "SETNAME", "rn"),
		cmd("CLIENT", "SETINFO", "LIB-NAME", "rl"), {args: []string{"HELLO", "3"}, mask: maskHello},
		cmd("GET", "missing"), cmd("RESET"), cmd("GET", "missing"), cmd("GET", "r"),
		cmd("CLIENT", "GETNAME"), cmd("SELECT", "2"), cmd("GET", "r"),
		{args: []string{"CLIENT", "INFO"}, mask: maskClientInfo}, // RESET keeps lib-name
	}, valkey8: true},
	{name: "reset-dedicated", steps: []step{
		{args: []string{"HELLO", "3", "SETNAME", "rd"}, mask: maskHello}, {args: []string{"CLIENT", "ID"}, mask: maskInt},
		cmd("SELECT", "3"), cmd("SET", "r", "in3"), cmd("MULTI"), cmd("SET", "a", "1"), cmd("RESET"),
		cmd("GET", "missing"), cmd("EXEC"), cmd("GET", "r"), cmd("GET", "a"), cmd("CLIENT", "GETNAME"),
		cmd("SELECT", "3"), cmd("GET", "r"), cmd("SET", "d:lock", "v", "NX"), cmd("SET", "d:lock", "w", "NX"),
	}},
	{name: "reset-subscribed", steps: []step{
		cmd("SUBSCRIBE", "ch1", "ch2"), {args: []string{"SUBSCRIBE", "ch3"}}, cmd("RESET"),
		cmd("PING"), cmd("GET", "missing"), cmd("SET", "x:lock", "v", "NX"), cmd("GET", "x:lock"),
	}},
	{name: "reset-resp3-subscribed", steps: []step{
		{args: []string{"HELLO", "3"}, mask: maskHello}, cmd("SUBSCRIBE", "ch1"), cmd("RESET"),
		cmd("PING"), cmd("GET", "missing"),
	}},
	{name: "reset-monitor", steps: []step{cmd("MONITOR"), cmd("RESET"), cmd("PING"), cmd("GET", "missing")}},
	{name: "reset-reply-off", steps: []step{
		{args: []string{"CLIENT", "REPLY", "OFF"}, none: true}, {args: []string{"SET", "a", "1"}, none: true},
		cmd("RESET"), cmd("GET", "a"),
	}},
	{name: "reset-tracking", steps: []step{
		{args: []string{"HELLO", "3"}, mask: maskHello}, cmd("CLIENT", "TRACKING", "ON"), cmd("GET", "t"),
		cmd("RESET"), cmd("CLIENT", "TRACKINGINFO"),
	}},
	{name: "client-reply-skip-lock", steps: []step{
		{args: []string{"CLIENT", "REPLY", "SKIP"}, none: true}, {args: []string{"SET", "x:lock", "v", "NX", "PX", "10000"}, none: true},
		cmd("PING"), cmd("SET", "x:lock", "w", "NX"),
		{args: []string{"CLIENT", "REPLY", "SKIP"}, none: true}, {args: []string{"SET", "x:lock", "w"}, none: true},
		cmd("PING"), {args: []string{"CLIENT", "REPLY", "SKIP"}, none: true}, {args: []string{"CLIENT", "REPLY", "ON"}},
		cmd("CLIENT", "REPLY", "BOGUS"), cmd("CLIENT", "REPLY"),
	}},
	{name: "client-reply-off-local", steps: []step{
		{args: []string{"CLIENT", "REPLY", "OFF"}, none: true}, {args: []string{"CLIENT", "SETNAME", "nn"}, none: true},
		{args: []string{"CLIENT", "GETNAME"}, none: true}, {args: []string{"GET", "missing"}, none: true},
		{args: []string{"CLIENT", "REPLY", "SKIP"}, none: true}, {args: []string{"SELECT", "1"}, none: true},
		{args: []string{"SET", "y:lock", "v", "NX"}, none: true},
		cmd("CLIENT", "REPLY", "ON"), cmd("CLIENT", "GETNAME"), cmd("GET", "y:lock"), cmd("DEL", "y:lock"),
	}},
	{name: "client-reply-subscribed", steps: []step{
		cmd("SUBSCRIBE", "ch"), {args: []string{"CLIENT", "REPLY", "OFF"}, none: true},
		{args: []string{"PING"}, none: true}, cmd("CLIENT", "REPLY", "ON"), cmd("PING"),
	}},
	{name: "subscribed-resp2-errors-first", steps: []step{
		cmd("SET", "s:lock", "v", "NX"), cmd("SUBSCRIBE", "ch"), cmd("DEL", "s:lock"), cmd("SET", "s:lock", "w", "NX"),
		cmd("CLIENT", "SETNAME", "sub"), cmd("SELECT", "1"), cmd("INFO", "server"), cmd("MONITOR"), cmd("PING"),
		cmd("UNSUBSCRIBE"), cmd("CLIENT", "GETNAME"),
	}},
	{name: "client-info-shapes", steps: []step{
		cmd("CLIENT", "SETNAME", "cn"), cmd("CLIENT", "SETINFO", "LIB-NAME", "ln"), cmd("CLIENT", "SETINFO", "LIB-VER", "1.0"),
		cmd("SELECT", "2"), cmd("CLIENT", "NO-EVICT", "ON"), cmd("CLIENT", "NO-TOUCH", "ON"),
		{args: []string{"CLIENT", "INFO"}, mask: maskClientInfo}, {args: []string{"CLIENT", "LIST"}, mask: maskClientInfo},
		cmd("CLIENT", "LIST", "TYPE", "pubsub"), cmd("CLIENT", "LIST", "TYPE", "foo"), cmd("CLIENT", "LIST", "ID", "abc"),
		cmd("CLIENT", "LIST", "ID", "999999"), cmd("CLIENT", "LIST", "BOGUS"),
		cmd("CLIENT", "KILL", "1.2.3.4:5"), cmd("CLIENT", "KILL", "ID", "0"), cmd("CLIENT", "KILL", "ID", "99999"),
		cmd("CLIENT", "KILL", "TYPE", "foo"), cmd("CLIENT", "KILL", "MAXAGE", "x"), cmd("CLIENT", "KILL", "foo", "bar"),
		cmd("CLIENT", "KILL", "ID"), cmd("CLIENT", "KILL", "ID", "1", "SKIPME"), cmd("CLIENT", "NO-EVICT", "maybe"),
		cmd("CLIENT", "ID", "x"), cmd("CLIENT", "NO-EVICT", "OFF"), {args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
	}, valkey8: true},
	{name: "client-info-resp3-subscribed", steps: []step{
		{args: []string{"HELLO", "3"}, mask: maskHello}, {args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
		cmd("SUBSCRIBE", "ch"), {args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
		{args: []string{"CLIENT", "LIST", "TYPE", "pubsub"}, mask: maskClientInfo},
	}, valkey8: true},
	{name: "client-info-monitor", steps: []step{cmd("MONITOR"), {args: []string{"CLIENT", "INFO"}, mask: maskClientInfo}}, valkey8: true},
	// A lock command shows in MONITOR as the script Valkey runs for it
	// (docs/connection-model.md), so the feed here is of other commands.
	{name: "monitor-feed", steps: []step{
		{args: []string{"PING"}, on: 1}, cmd("MONITOR"), {args: []string{"SET", "mk", "v"}, on: 1},
		{mask: maskMonitor}, {args: []string{"GET", "mk"}, on: 1}, {mask: maskMonitor},
		{args: []string{"DEL", "mk"}, on: 1}, {mask: maskMonitor}, cmd("RESET"), cmd("PING"),
	}},
	// MULTI opens the client's own connection; MONITOR shows the client's
	// commands only, not the proxy's set-up of that connection.
	{name: "monitor-multi", steps: []step{
		{args: []string{"SELECT", "3"}, on: 1}, cmd("MONITOR"),
		{args: []string{"MULTI"}, on: 1}, {mask: maskMonitor},
		{args: []string{"SET", "mm", "v"}, on: 1},
		{args: []string{"EXEC"}, on: 1}, {mask: maskMonitor}, {mask: maskMonitor},
		{args: []string{"BLPOP", "ml", "1"}, on: 2}, {mask: maskMonitor},
	}},
	// A client's login shows in MONITOR as the client sent it, redacted.
	{name: "monitor-auth", steps: []step{
		{args: []string{"PING"}, on: 1}, cmd("MONITOR"),
		{args: []string{"auth", "not-real"}, on: 1}, {mask: maskMonitor},
		{args: []string{"auth", "not-real", "not-a-password"}, on: 1}, {mask: maskMonitor},
		{args: []string{"hello", "2", "AUTH", "not-real", "not-a-password"}, on: 1}, {mask: maskMonitor},
	}},
	{name: "busy-script-kill", steps: []step{
		{args: []string{"PING"}, on: 1}, {args: []string{"PING"}, on: 2},
		{args: []string{"EVAL", "while true do end", "0"}, none: true},
		{args: []string{"SCRIPT", "KILL"}, on: 1, until: "+OK"}, cmd(), {args: []string{"SCRIPT", "KILL"}, on: 1},
		{args: []string{"FUNCTION", "KILL"}, on: 1}, cmd("PING"), {args: []string{"PING"}, on: 2},
	}, directives: []string{"busy-reply-threshold 50"}},
	// A no-touch client's reads leave the key's access counter as it was.
	{name: "client-no-touch", steps: []step{
		cmd("SET", "nt", "v"), cmd("CLIENT", "NO-TOUCH", "OFF"), cmd("CLIENT", "NO-TOUCH", "ON"),
		cmd("GET", "nt"), cmd("OBJECT", "FREQ", "nt"), {args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
		cmd("CLIENT", "NO-TOUCH", "OFF"), cmd("GET", "nt"), cmd("OBJECT", "FREQ", "nt"),
		{args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
	}, directives: []string{"maxmemory-policy allkeys-lfu"}, valkey8: true},
	{name: "client-kill-user", steps: []step{
		cmd("CLIENT", "KILL", "USER", "nobody"), cmd("CLIENT", "KILL", "USER", "default", "ID", "999999"),
		cmd("CLIENT", "KILL", "MAXAGE", "-1"), cmd("CLIENT", "KILL", "MAXAGE", "0"), cmd("CLIENT", "KILL", "MAXAGE", "x"),
	}, valkey8: true},
	// Valkey passes a script's big number on as the script gave it.
	{name: "script-malformed-bignum", steps: []step{
		cmd("EVAL", `redis.setresp(3); return {big_number='123\r\n123'}`, "0"),
		{args: []string{"HELLO", "3"}, mask: maskHello},
		cmd("EVAL", `redis.setresp(3); return {big_number='123\r\n123'}`, "0"), cmd("PING"),
	}},
	{name: "sync-fullresync", steps: []step{
		cmd("REPLCONF", "capa", "eof"), {args: []string{"PSYNC", "?", "-1"}, mask: maskFullResync},
	}, directives: []string{"repl-diskless-sync-delay 0"}},
	{name: "auth-other-user", steps: []step{
		cmd("AUTH", "alice", "wrong"), cmd("AUTH", "alice", "pw"), {args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
		cmd("HELLO", "3", "AUTH", "alice", "wrong"), cmd("SET", "h:lock", "v", "NX"), cmd("SET", "h:lock", "w", "NX"),
		{args: []string{"HELLO", "3", "AUTH", "alice", "pw"}, mask: maskHello}, cmd("SET", "h:lock", "w", "NX"),
		cmd("RESET"), cmd("SET", "h:lock", "w", "NX"),
	}, directives: []string{"user alice on >pw ~* &* +@all"}, valkey8: true},
	// A login's failures change nothing (still alice after a wrong
	// password), HELLO's version is checked before its credentials, a
	// password alone with a default user that has none is Valkey's error,
	// and alice's rights are Valkey's (NOPERM outside her keys).
	{name: "auth-failures-and-order", steps: []step{
		cmd("AUTH", "nopass-here"), cmd("AUTH", "alice", "pw"), cmd("ACL", "WHOAMI"),
		cmd("AUTH", "alice", "wrong"), cmd("ACL", "WHOAMI"), cmd("SET", "b:k", "v"), cmd("SET", "a:k", "v"),
		cmd("HELLO", "4", "AUTH", "default", "x"), cmd("ACL", "WHOAMI"),
		cmd("HELLO", "2", "AUTH", "alice", "pw", "SETNAME", "bad name"), cmd("ACL", "WHOAMI"),
		cmd("RESET"), cmd("ACL", "WHOAMI"), cmd("SET", "b:k", "v"),
		// A bad name is refused before the credentials are tried.
		cmd("HELLO", "2", "AUTH", "alice", "pw", "SETNAME", "bad name"), cmd("ACL", "WHOAMI"),
		// alice's own connections (a transaction, a blocking pop) are
		// alice's too.
		cmd("AUTH", "alice", "pw"), cmd("MULTI"), cmd("SET", "a:m", "1"), cmd("SET", "b:m", "1"), cmd("EXEC"),
		cmd("MULTI"), cmd("INCR", "a:m"), cmd("ACL", "WHOAMI"), cmd("EXEC"),
		cmd("BLPOP", "b:list", "0.01"), cmd("BLPOP", "a:list", "0.01"), cmd("ACL", "WHOAMI"),
		cmd("SCRIPT", "KILL"), cmd("GET", "a:m"),
	}, directives: []string{"user alice on >pw ~a:* &* +@all"}, valkey8: true}, // Redis 7.0 checks the name after the login
	{name: "reset-no-evict-no-touch", steps: []step{
		cmd("CLIENT", "NO-EVICT", "ON"), cmd("CLIENT", "NO-TOUCH", "ON"), cmd("RESET"),
		{args: []string{"CLIENT", "INFO"}, mask: maskClientInfo},
	}, valkey8: true},
	// Valkey's errors come first: a command of another data type on a
	// string lock key gets WRONGTYPE (from Valkey, in the same step as the
	// refusal it would otherwise get), by its holder and by a stranger,
	// on a shared and on a dedicated connection; the lock is untouched.
	{name: "wrongtype-on-lock", steps: []step{
		cmd("SET", "w:lock", "v", "NX", "PX", "60000"),
		cmd("LPOP", "w:lock"), cmd("RPUSH", "w:lock", "x"), cmd("SREM", "w:lock", "v"), cmd("SADD", "w:lock", "v"),
		cmd("HDEL", "w:lock", "f"), cmd("HINCRBY", "w:lock", "f", "1"), cmd("HGET", "w:lock", "f"),
		cmd("ZADD", "w:lock", "1", "m"), cmd("ZPOPMIN", "w:lock"), cmd("XADD", "w:lock", "*", "f", "v"),
		cmd("GEOADD", "w:lock", "0", "0", "m"), cmd("LMOVE", "w:lock", "w:other", "LEFT", "RIGHT"),
		{args: []string{"LPOP", "w:lock"}, on: 1}, {args: []string{"HSET", "w:lock", "f", "v"}, on: 1},
		cmd("CLIENT", "ID", "x"), cmd("GET", "w:lock"),
		cmd("MULTI"), cmd("GET", "w:lock"), cmd("DISCARD"), cmd("LPOP", "w:lock"), cmd("GET", "w:lock"),
	}},
	{name: "setname-nul", steps: []step{
		cmd("CLIENT", "SETNAME", "ab\x00c d"), cmd("CLIENT", "GETNAME"),
		cmd("CLIENT", "SETNAME", "a b"), cmd("CLIENT", "GETNAME"),
	}, valkey8: true},
}

// Masks for what differs by nature between two servers and connections.
var (
	reInt        = regexp.MustCompile(`^:\d+\r\n$`)
	reHelloID    = regexp.MustCompile(`(\$2\r\nid\r\n:)\d+`)
	reHelloVer   = regexp.MustCompile(`(\$7\r\nversion\r\n\$)\d+\r\n[^\r]*`)
	reInfoField  = regexp.MustCompile(`\b(id|addr|laddr|fd|age|idle|qbuf|qbuf-free|argv-mem|multi-mem|obl|oll|omem|tot-mem|tot-net-in|tot-net-out|tot-cmds|io-thread|rbs|rbp)=\S*`)
	reBulkLen    = regexp.MustCompile(`^([$=])\d+\r\n`)
	reMonitor    = regexp.MustCompile(`^\+\d+\.\d+ \[(\d+) [^\]]+\]`)
	reFullResync = regexp.MustCompile(`^\+FULLRESYNC \S+ \d+`)
)

// maskMonitor keeps a MONITOR line's command and arguments and masks its
// time and the address of the connection it came on (through the proxy,
// an upstream connection of the proxy's).
func maskMonitor(s string) string {
	return reMonitor.ReplaceAllString(s, "+T [${1} A]")
}

func maskFullResync(s string) string {
	return reFullResync.ReplaceAllString(s, "+FULLRESYNC ID OFFSET")
}

func maskInt(s string) string {
	if reInt.MatchString(s) {
		return ":N\r\n"
	}
	return s
}

func maskHello(s string) string {
	return reHelloVer.ReplaceAllString(reHelloID.ReplaceAllString(s, "${1}N"), "${1}V")
}

// maskClientInfo keeps CLIENT INFO's and CLIENT LIST's field names, order and
// the values that are the client's own state (name, db, flags, cmd, user,
// lib-name, resp...), and masks the ones that differ by nature.
func maskClientInfo(s string) string {
	return reBulkLen.ReplaceAllString(reInfoField.ReplaceAllString(s, "$1=?"), "${1}N\r\n")
}
