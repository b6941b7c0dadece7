package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/internal/cmdgrammar"
	"github.com/redis/go-redis/v9"
)

// selfPort stands for the port of the server a line is sent to (MIGRATE,
// REPLICAOF ...), so that a line sent to the oracle stays on the oracle.
const selfPort = "\x00self-port"

// pools are the values lines draw from: the world's protected keys and
// plain keys, its tokens and field names, and values for arguments of a
// few names.
func pools(dumps []string) *cmdgrammar.Pools {
	// The held locks and the fenced data come three times: most lines
	// should name something protected.
	keys := []string{stringLock, hashLock, mutex, guarded, stringLock, hashLock, mutex, guarded,
		stringLock, hashLock, mutex, guarded, fence, "{o}:fence:high", "lockproxy:epoch",
		"{v:lock}:lockproxy:owners", "{v:lock}:lockproxy:grants", "{rw:lock}:lockproxy:owners",
		"{o}:mutex:lockproxy:owners", "{lockproxy}:lockproxy:index", "{lockproxy}:lockproxy:flush",
		"plain:str", "plain:hash", "plain:list", "plain:set", "plain:zset", "plain:stream", "plain:new", "{o}:new"}
	strs := []string{"mode", "write", "x", "1"}
	for _, db := range worldDBs {
		strs = append(strs, stringToken(db), ownerField(db))
	}
	return &cmdgrammar.Pools{
		Keys: keys, Strings: strs,
		ByName: map[string][]string{
			"host": {"127.0.0.1"}, "ip": {"127.0.0.1"}, "port": {selfPort, "1"},
			"function-code":    {evilLibrary, "#!lua name=fzlib\nredis.register_function('fzcall', function(k, a) return redis.call('DEL', k[1]) end)"},
			"serialized-value": dumps,
			"script":           {evalBody, "return redis.call('DEL', KEYS[1])", "return redis.call('SET', KEYS[1], ARGV[1])"},
			"numkeys":          {"1", "0", "2"},
			"library-name":     {"fzlib", "fzevil"},
			"function":         {"fzcall", "evil", "fzcall__lockproxy"},
			"username":         {"default", "fzuser"},
			"rule":             {"on", "nopass", "~*", "&*", "+@all", ">fzsecret", "off", "resetpass", "-@all"},
			"parameter":        {"requirepass", "maxmemory", "appendonly", "save", "enable-debug-command", "notify-keyspace-events", "maxmemory-policy", "bind", "port"},
			"destination-db":   {"0", "2", "1"},
			"db":               {"0", "2", "1"},
			"index1":           {"0", "2"},
			"index2":           {"0", "2"},
			// MIGRATE's and CLIENT PAUSE's: short, so that a MIGRATE to
			// the server itself or a pause ends soon.
			"timeout": {"100", "0"},
		},
		Bare: map[string][][]string{
			"DEBUG": {{"SLEEP", "0"}, {"SEGFAULT"}, {"RESTART"}, {"RELOAD"}, {"SET-ACTIVE-EXPIRE", "0"},
				{"OBJECT", stringLock}, {"JMAP"}, {"CHANGE-REPL-ID"}, {"DIGEST-VALUE", stringLock}},
		},
	}
}

// forms are the line sent the three ways: as it is; as the one call of
// EVAL "return redis.call(unpack(ARGV))" with the line's keys in KEYS;
// and as the one call of fzlib's function, likewise.
func forms(l cmdgrammar.Line) map[string][]string {
	keys := make([]string, len(l.Keys))
	for i, k := range l.Keys {
		keys[i] = l.Args[k]
	}
	call := func(head ...string) []string {
		out := append(head, strconv.Itoa(len(keys)))
		out = append(out, keys...)
		return append(out, l.Args...)
	}
	return map[string][]string{
		modePlain: l.Args,
		modeEval:  call("EVAL", evalBody),
		modeFcall: call("FCALL", "fzcall"),
	}
}

// withPort is args with selfPort replaced by port.
func withPort(args []string, port int) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == selfPort {
			a = strconv.Itoa(port)
		}
		out[i] = a
	}
	return out
}

// cmdStat is the command's counters in INFO commandstats: calls (it ran)
// and failed (it ran and answered an error), rejected (refused before it ran).
type cmdStat struct{ calls, failed, rejected int64 }

func readStat(c *redis.Client, name string) (cmdStat, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return cmdStat{}, err
	}
	var s cmdStat
	sc := bufio.NewScanner(strings.NewReader(info))
	prefix := "cmdstat_" + name + ":"
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		for _, f := range strings.Split(strings.TrimPrefix(l, prefix), ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls = n
			case "failed_calls":
				s.failed = n
			case "rejected_calls":
				s.rejected = n
			}
		}
	}
	return s, nil
}

func replyText(r []byte, err error) string {
	if err != nil {
		return "(none: " + err.Error() + ")"
	}
	return short(r)
}

// holderDB is the database where a stranger may hold locks of its own
// under the world's lock names (the world watches 0 and 2): a client that
// holds {o}:mutex there must still not reach db 0's {o}:data (COPY ... DB,
// MOVE, MIGRATE).
const holderDB = 1

// stranger sends args through lockproxy on a fresh connection that holds
// nothing in the world, in database db; in holderDB it first takes the
// world's lock names there.
func stranger(addr string, db int, args []string, timeout time.Duration) ([]byte, error) {
	c, err := dialRaw(addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	if db != 0 {
		if r, err := c.do("SELECT", strconv.Itoa(db)); err != nil || isError(r) {
			return nil, fmt.Errorf("SELECT %d: %q %v", db, r, err)
		}
	}
	if db == holderDB {
		for _, k := range []string{stringLock, mutex} {
			if r, err := c.do("SET", k, "strangertoken", "NX", "PX", "60000"); err != nil || isError(r) {
				return nil, fmt.Errorf("stranger's SET %s NX in db %d: %q %v", k, db, r, err)
			}
		}
		if r, err := c.do("SET", guarded, "fromstranger"); err != nil || isError(r) {
			return nil, fmt.Errorf("stranger's SET %s in db %d: %q %v", guarded, db, r, err)
		}
	}
	c.timeout = timeout
	return c.do(args...)
}

// target is a world lines are sent to: the standalone world or the cluster.
type target interface {
	name() string
	proxyAddr() string
	port() int                             // what selfPort becomes
	strangerDB(rng *rand.Rand) int         // the database a stranger sends a line in
	afterSend(db int)                      // cleans up after a line sent in db
	read(libs bool) (*snapshot, error)     // the world now, read directly
	baseline() *snapshot                   // the world as built
	allowed(args []string) map[string]bool // the keys a line may change (it passes their token)
	stat(name string) (cmdStat, error)     // the command's counters, summed over the world's servers
	restore(restart bool) error            // rebuilds the world (restart: its servers too)
	loadLibrary() error                    // loads fzlib through lockproxy
}

// runner sends lines to the oracle and the world and judges them.
type runner struct {
	rng    *rand.Rand
	oracle *oracle
	rep    *report
	gate   bool
	// gated is lockproxy's command table's verdict (commands.Table.Gated,
	// from the oracle's own COMMAND table): the commands lockproxy's gate
	// must keep from the stranger. Valkey flags the exempt reads admin
	// too (docs/operations.md lists them and why); a write among them is
	// still judged by what it changed.
	gated func(args []string) bool
	// variable: whether the plain command's key flags depend on its
	// other arguments (keyspec.VariableFlags); nil: never.
	variable func(args []string) bool
	log      func(format string, a ...any)
}

// line runs one generated line of c against the world w: to the oracle,
// then from a stranger through lockproxy three ways, each judged by a
// direct read of the world.
func (r *runner) line(w target, p *cmdgrammar.Pools, or *oracle, c *cmdgrammar.Command) error {
	l := cmdgrammar.Generate(r.rng, c, p)
	t := r.rep.cmd(c.Name())
	t.lines++
	start := time.Now()
	defer func() { t.spent += time.Since(start) }()
	if len(l.Marks) == 0 {
		t.marks["none"] = true
	}
	for _, m := range l.Marks {
		t.marks[m] = true
	}
	accepted, ok, oreply := or.ask(withPort(l.Args, or.srv.Port), timeoutFor(c.Name()))
	verdict := "accepted"
	if !ok {
		verdict = "no reply"
	} else if !accepted {
		verdict = "refused " + short(oreply)
	}
	switch {
	case !ok:
		t.oracleNoReply++
	case accepted:
		t.oracleAccepted++
	default:
		t.oracleRefuse++
	}
	if err := or.after(c, accepted, ok); err != nil {
		return fmt.Errorf("oracle: %v", err)
	}
	db := w.strangerDB(r.rng)
	allowed := w.allowed(l.Args)
	libs := strings.HasPrefix(c.Name(), "FUNCTION")
	var ways [3]way
	var sent [3][]string
	var replies [3]string
	for mi, mode := range modes {
		args := withPort(forms(l)[mode], w.port())
		sent[mi] = args
		before, err := w.stat(c.StatName())
		if err != nil {
			return fmt.Errorf("world: %v", err)
		}
		reply, sendErr := stranger(w.proxyAddr(), db, args, timeoutFor(c.Name()))
		w.afterSend(db)
		// The command's calls are counted before the world is read: the
		// read itself sends ACL LIST and CONFIG GET.
		after, statErr := w.stat(c.StatName())
		var diffs []string
		changed := false // anything watched changed, allowed or not
		now, err := w.read(libs)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("server unreadable after the line: %v", err))
		} else {
			diffs = diff(w.baseline(), now, allowed)
			changed = len(diff(w.baseline(), now, nil)) > 0
		}
		if statErr != nil {
			after = before // the server went away: diffs say so
		}
		ran := after.calls - before.calls
		okRun := ran - (after.failed - before.failed)
		gateOnly := len(diffs) == 0
		if err == nil && r.gate && r.isGated(c, l.Args) && okRun > 0 {
			diffs = append(diffs, fmt.Sprintf("%s reached Valkey and ran (it reconfigures Valkey; the stranger is no lockproxy admin); reply %s", c.Name(), short(reply)))
		}
		var o outcome
		switch {
		case len(diffs) > 0:
			o = failed
		case sendErr != nil:
			o = noReply
		case !isError(reply):
			o = harmless
		case ran > 0 || after.rejected > before.rejected:
			o = refusedByValkey
		default:
			o = refusedByProxy
		}
		t.byMode[mode][o]++
		ways[mi] = way{out: o, changed: changed}
		if o == refusedByProxy {
			ways[mi].code = errCode(reply)
			if strings.Contains(string(reply), "one of lockproxy's own keys") {
				ways[mi].code = ownKeyCode
			}
		}
		replies[mi] = replyText(reply, sendErr)
		if o == failed {
			r.rep.failures[c.Name()] = append(r.rep.failures[c.Name()], failure{world: w.name(), mode: mode, db: db, args: args, diffs: diffs, gateOnly: gateOnly, oracle: verdict, reply: replyText(reply, sendErr)})
			r.log("FAIL %s [%s %s db %d] %s: %s", c.Name(), w.name(), mode, db, quoteArgs(args), strings.Join(diffs, "; "))
		}
		// The next send starts from the world as built: after any change
		// (a failure, or a lock changed by its token), or a server that
		// could not be read. A command that only ran (gate) changed
		// nothing watched.
		if changed || err != nil || (o == failed && !gateOnly) {
			if err := w.restore(err != nil || needsRestart(diffs)); err != nil {
				return fmt.Errorf("world restore: %v", err)
			}
		}
	}
	v, pairs := judge(ways, func(m int) oracleVerdict { return r.askForm(or, db, l, m, c) })
	token := false
	for k := range allowed {
		token = token || strings.HasPrefix(k, strconv.Itoa(db)+"/")
	}
	r.rep.judges.add(v, disagreement{world: w.name(), db: db, cmd: c.Name(), ways: ways, classes: classes(ways), pairs: pairs,
		args: sent, replies: replies, token: token, variable: r.variable != nil && r.variable(l.Args)})
	if v == disagree {
		r.log("DISAGREE %s [%s db %d] %s", c.Name(), w.name(), db, classes(ways))
	}
	if libs {
		// A line may have replaced or flushed fzlib (a stranger may: it
		// is no protected key); the next FCALL needs it.
		if err := w.loadLibrary(); err != nil {
			return w.restore(true)
		}
	}
	return nil
}

// isGated: whether the gate must keep l's command from the stranger;
// without lockproxy's table (a unit test's runner), Valkey's flags
// (admin or dangerous, not readonly: cmdgrammar's Reconfigures).
func (r *runner) isGated(c *cmdgrammar.Command, args []string) bool {
	if r.gated == nil {
		return c.Reconfigures()
	}
	return r.gated(args)
}

// askForm is Valkey's own verdict on line l sent mode's way (plain, EVAL,
// FCALL with fzlib) directly to the oracle, in the stranger's database
// db (the cluster oracle has database 0 only); the oracle is put back
// after.
func (r *runner) askForm(or *oracle, db int, l cmdgrammar.Line, mode int, c *cmdgrammar.Command) oracleVerdict {
	if or.cluster {
		db = 0
	}
	if modes[mode] == modeFcall {
		if err := or.direct.FunctionLoadReplace(ctx, fzLibrary).Err(); err != nil {
			return oracleSilent
		}
	}
	accepted, ok, _ := or.askIn(db, withPort(forms(l)[modes[mode]], or.srv.Port), timeoutFor(c.Name()))
	if err := or.after(c, accepted, ok); err != nil {
		r.log("oracle after a script form: %v", err)
	}
	switch {
	case !ok:
		return oracleSilent
	case accepted:
		return oracleAccepts
	}
	return oracleRefuses
}
