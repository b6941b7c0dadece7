package proxy

import (
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
)

// The command table: what the proxy knows of each command name, in one
// place. A name has a kind (how the session must treat it to keep every
// client's connection state exact), a family (the label of the
// per-command metrics) and, for a blocking command, how long it may wait.
// The kinds are derived from Valkey's own command table (its flags) once
// one is loaded, with the names the proxy handles itself on top (byName;
// CLIENT's subcommands in clientKinds); until then, and when Valkey cannot
// be reached, from the offline fallback below. Loading the table from Valkey is cmdtable.go's.

// kind says how the proxy must treat a command to keep every client's
// connection state exact while most commands share upstream connections.
type kind uint8

const (
	// kForward: carries no connection state; any shared connection with the
	// session's protocol and database can run it. The default.
	kForward kind = iota
	// kDedicated: creates or reads state that belongs to one connection
	// (a transaction, a blocked wait, a client id): the session moves onto
	// its own upstream connection for the rest of its life.
	kDedicated
	// kStream: like kDedicated, and afterwards replies no longer pair one to
	// one with commands (SUBSCRIBE confirms once per channel, MONITOR never
	// stops), so the connection forwards replies as they arrive.
	kStream
	// kSync: SYNC and PSYNC; like kStream, and what follows is not RESP
	// any more but a replication stream: the connection becomes a byte
	// pipe both ways.
	kSync
	// kXRead: dedicated only with BLOCK (a blocking read), shared otherwise.
	kXRead
	kHello
	kSelect
	kClient
	kAuth
	kQuit
	kReset
	// kAdmin: LOCKPROXY ..., answered by the proxy itself, never forwarded.
	kAdmin
	// kInfo: INFO; the proxy answers INFO lockproxy, forwards the rest.
	kInfo
	// kLong: a command that may hold Valkey for long (SAVE, FLUSHALL,
	// FLUSHDB, DEBUG): forwarded like kForward, with the reply deadline
	// stretched as blockingWait says.
	kLong
	// kServer: SCRIPT, FUNCTION and SHUTDOWN, whose KILL, STATS and
	// SHUTDOWN itself go on a connection of their own (busy.go); the rest
	// is kForward.
	kServer
)

// forwarded reports whether commands of kind k go to Valkey as they are,
// with nothing about the connection to decide: kForward, and kServer and
// kLong, which are kForward with one detail each.
func forwarded(k kind) bool { return k == kForward || k == kServer || k == kLong }

// byName lists the commands the proxy handles by name: each is a behaviour
// of its own (connection state, logins, the proxy's own commands), which no
// command flag describes. Blocking and subscribe-family commands are not
// here: they come from Valkey's command table (see commands).
var byName = map[string]kind{
	"multi": kDedicated,
	"watch": kDedicated,

	// Cluster-mode connection flags.
	"readonly":  kDedicated,
	"readwrite": kDedicated,
	"asking":    kDedicated,

	"monitor": kStream,
	"sync":    kSync,
	"psync":   kSync,
	// REPLCONF (capa eof, rdb-only, ...) configures the replication
	// stream of the connection that sends it.
	"replconf": kDedicated,

	"hello":  kHello,
	"select": kSelect,
	"client": kClient,
	"auth":   kAuth,
	"quit":   kQuit,
	"reset":  kReset,

	"lockproxy": kAdmin,
	"info":      kInfo,

	"save":     kLong,
	"flushall": kLong,
	"flushdb":  kLong,
	"debug":    kLong,

	"script":   kServer,
	"function": kServer,
	"shutdown": kServer,
}

// clientKind is the same for CLIENT subcommands. SETNAME, GETNAME and SETINFO
// are answered by the proxy from the session's own state (go-redis and other
// clients send them on every new connection, so they must not cost a
// dedicated connection); the rest of this list is per-connection state.
var clientKinds = map[string]kind{
	"tracking":      kDedicated,
	"trackinginfo":  kDedicated,
	"getredir":      kDedicated,
	"caching":       kDedicated,
	"capa":          kDedicated,
	"import-source": kDedicated,
	"no-touch":      kDedicated, // ON; OFF on a shared connection is answered by the proxy
}

// lower copies b lower-cased into buf and returns it; ok is false when b does
// not fit (no command name is that long).
func lower(buf []byte, b []byte) ([]byte, bool) {
	if len(b) > len(buf) {
		return nil, false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(b)], true
}

// lookup returns the kind of a command name in any letter case. It does not
// allocate: the map index with string(bytes) is optimised by the compiler.
func lookup(table map[string]kind, name []byte) kind {
	var buf [24]byte
	l, ok := lower(buf[:], name)
	if !ok {
		return kForward
	}
	return table[string(l)]
}

// flag marks a family of commands by name that the proxy treats alike
// beyond its kind; flagsOf looks a name up. A place that decides by family
// asks the table instead of naming the commands itself.
type flag uint8

const (
	// fScriptCall: EVAL, EVALSHA, FCALL and their _RO forms, which may
	// hold Valkey while they run (busyscript.go).
	fScriptCall flag = 1 << iota
	// fClusterFace: CLUSTER, READONLY, READWRITE, ASKING, which the
	// proxy answers in front of a cluster (cluster_face.go).
	fClusterFace
	// fShardChannel: SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, whose channel
	// names place them in a slot as a key would (cluster_route.go).
	fShardChannel
	// fDelete: DEL and UNLINK, split by slot when they release locks in
	// several (cluster_split_locks.go).
	fDelete
	// fOneServer: PING and INFO, keyless commands in front of a cluster
	// that one node answers, not every primary (cluster_fanout.go).
	fOneServer
	// fSplitSum, fSplitMGet, fSplitMSet: split by slot in front of a
	// cluster when their keys span slots (cluster_split.go): DEL, UNLINK,
	// EXISTS, TOUCH (the counts added up), MGET, MSET.
	fSplitSum
	fSplitMGet
	fSplitMSet
)

var byNameFlags = map[string]flag{
	"eval": fScriptCall, "evalsha": fScriptCall, "eval_ro": fScriptCall, "evalsha_ro": fScriptCall,
	"fcall": fScriptCall, "fcall_ro": fScriptCall,
	"cluster": fClusterFace, "readonly": fClusterFace, "readwrite": fClusterFace, "asking": fClusterFace,
	"ssubscribe": fShardChannel, "sunsubscribe": fShardChannel, "spublish": fShardChannel,
	"del": fDelete | fSplitSum, "unlink": fDelete | fSplitSum, "exists": fSplitSum, "touch": fSplitSum,
	"mget": fSplitMGet, "mset": fSplitMSet,
	"ping": fOneServer, "info": fOneServer,
}

// flagsOf is the flags of a command name in any letter case. It does not
// allocate.
func flagsOf(name []byte) flag {
	var buf [24]byte
	l, ok := lower(buf[:], name)
	if !ok {
		return 0
	}
	return byNameFlags[string(l)]
}

// cmdID names a command whose own behaviour the proxy implements beyond its
// kind and flags: a transaction's steps, the cluster face's answers, the
// subscribe family's shard forms, a container whose subcommands decide
// (SCRIPT, FUNCTION, CLIENT). idOf looks a name up; any other is cOther.
// A place that treats one command its own way asks for its id here
// instead of spelling its name.
type cmdID uint8

const (
	cOther cmdID = iota
	cMulti
	cExec
	cDiscard
	cMonitor
	cPing
	cScan
	cScript
	cFunction
	cShutdown
	cClient
	cReadonly
	cReadwrite
	cAsking
	cSubscribe
	cSSubscribe
	cSUnsubscribe
	cSPublish
	cWait
	cWaitAOF
)

var byNameID = map[string]cmdID{
	"multi": cMulti, "exec": cExec, "discard": cDiscard,
	"monitor": cMonitor, "ping": cPing, "scan": cScan,
	"script": cScript, "function": cFunction, "shutdown": cShutdown, "client": cClient,
	"readonly": cReadonly, "readwrite": cReadwrite, "asking": cAsking,
	"subscribe": cSubscribe, "ssubscribe": cSSubscribe, "sunsubscribe": cSUnsubscribe, "spublish": cSPublish,
	"wait": cWait, "waitaof": cWaitAOF,
}

// idOf is the id of a command name in any letter case. It does not
// allocate.
func idOf(name []byte) cmdID {
	if len(name) > len("sunsubscribe") {
		return cOther // longer than every name above
	}
	var buf [12]byte
	l, ok := lower(buf[:], name)
	if !ok {
		return cOther
	}
	return byNameID[string(l)]
}

// blockingWait reports whether a command may block on the server, and for
// how long it asked (negative: forever). Whether it blocks is c.blocks (the
// "blocking" flag); where its timeout is, COMMAND does not say, so the
// commands Valkey 8 has are listed: seconds as the last argument (BLPOP,
// BRPOP, BRPOPLPUSH, BLMOVE, BZPOPMIN, BZPOPMAX), seconds first (BLMPOP,
// BZMPOP), milliseconds last (WAIT, WAITAOF), milliseconds after BLOCK
// (XREAD, XREADGROUP); any other blocking command may wait forever. DEBUG
// SLEEP holds Valkey as long as it says; SAVE, a synchronous FLUSHALL or
// FLUSHDB and DEBUG RELOAD as long as the dataset takes, which no timeout
// can tell from a hung server: Valkey is alive, so the reply is waited for.
func (c *commands) blockingWait(args [][]byte) (time.Duration, bool) {
	var buf [24]byte
	name, ok := lower(buf[:], args[0])
	if !ok {
		return 0, false
	}
	if len(args) < 2 {
		// SAVE, FLUSHALL and FLUSHDB alone run synchronously.
		l := string(name)
		return -1, l == "save" || l == "flushall" || l == "flushdb"
	}
	last := args[len(args)-1]
	switch string(name) {
	case "blpop", "brpop", "brpoplpush", "blmove", "bzpopmin", "bzpopmax":
		return waitFor(last, time.Second), true
	case "blmpop", "bzmpop":
		return waitFor(args[1], time.Second), true
	case "wait", "waitaof":
		return waitFor(last, time.Millisecond), true
	case "save", "flushall", "flushdb":
		return -1, !resp.EqualFold(last, "async")
	case "debug":
		switch {
		case resp.EqualFold(args[1], "sleep") && len(args) == 3:
			return waitFor(args[2], time.Second), true
		case resp.EqualFold(args[1], "reload"), resp.EqualFold(args[1], "loadaof"):
			return -1, true
		}
	case "xread", "xreadgroup":
		for i, a := range args[1 : len(args)-1] {
			if resp.EqualFold(a, "streams") {
				break
			}
			if resp.EqualFold(a, "block") {
				return waitFor(args[i+2], time.Millisecond), true
			}
		}
	default:
		if c.blocks[string(name)] && !keyspec.BlocksOnlyWithOption(string(name)) {
			return -1, true
		}
	}
	return 0, false
}

// waitFor converts a command's timeout argument; 0 means forever. An
// unreadable one is left to Valkey to refuse (no extra wait).
func waitFor(arg []byte, unit time.Duration) time.Duration {
	f, err := strconv.ParseFloat(string(arg), 64)
	if err != nil || f < 0 {
		return 0
	}
	if f == 0 {
		return -1
	}
	return time.Duration(f * float64(unit))
}

// family is a command's family, the label of the per-command metrics: a
// handful of values derived from the command's kind (above), never
// the command's name, so the number of series stays bounded whatever
// clients send.
type family uint8

const (
	famForward     family = iota // forwarded as it is on a shared connection
	famLock                      // decided by a lock rule: rewritten, refused or observed
	famDedicated                 // needs the client's own connection: MULTI, WATCH, blocking commands
	famPubsub                    // subscriptions and MONITOR
	famReplication               // SYNC, PSYNC
	famConnection                // HELLO, SELECT, CLIENT, AUTH, QUIT, RESET
	famAdmin                     // LOCKPROXY ..., INFO
	famServer                    // SAVE, FLUSHALL, FLUSHDB, DEBUG, SCRIPT, FUNCTION, SHUTDOWN
	numFamilies
)

var familyNames = [numFamilies]string{"forward", "lock", "dedicated", "pubsub", "replication", "connection", "admin", "server"}

func (f family) String() string { return familyNames[f] }

// familyOf is the family of a command of kind k before any lock rule looked
// at it (lockplan.go makes it famLock).
func familyOf(k kind) family {
	switch k {
	case kDedicated, kXRead:
		return famDedicated
	case kStream:
		return famPubsub
	case kSync:
		return famReplication
	case kHello, kSelect, kClient, kAuth, kQuit, kReset:
		return famConnection
	case kAdmin, kInfo:
		return famAdmin
	case kLong, kServer:
		return famServer
	}
	return famForward
}

// commands is what the proxy knows of command names: the kind of each
// (above) and which block on the server. It is derived from Valkey's
// own command table once one is loaded (fromTable), so that a blocking or
// subscribe-family command of a newer server, or of a module, is routed
// right the day the server offers it; until then, and when Valkey cannot be
// reached, it is the fallback below. Built once per table, read-only.
type commands struct {
	table *keyspec.Table // nil for the fallback
	kinds map[string]kind
	// blocks: the command may block on the server (Valkey's "blocking"
	// flag; XREAD and XREADGROUP only with BLOCK, see
	// keyspec.BlocksOnlyWithOption).
	blocks map[string]bool
	// containers: commands with subcommands, whose CLIENT LIST cmd field
	// names the subcommand too (client|list).
	containers map[string]bool
}

// The fallback, used until Valkey's table is loaded: what the tables of
// valkey-server 8 and redis-server 7.0 say, written out. TestFallbackAgrees
// loads COMMAND from both and checks that fromTable gives these lists.
var (
	// fallbackBlocking: the commands flagged "blocking" (WAITAOF exists
	// from Valkey 7.2 / Redis 7.2 on), and WAIT (blocksUnflagged).
	fallbackBlocking = []string{"blpop", "brpop", "brpoplpush", "blmove", "blmpop",
		"bzpopmin", "bzpopmax", "bzmpop", "wait", "waitaof", "xread", "xreadgroup"}
	// fallbackSubscribe: the subscribe family, flagged "pubsub" and
	// "noscript" (PUBLISH and PUBSUB ... are "pubsub" only).
	fallbackSubscribe = []string{"subscribe", "psubscribe", "ssubscribe",
		"unsubscribe", "punsubscribe", "sunsubscribe"}
	// fallbackContainers: the commands with subcommands that clients use.
	fallbackContainers = []string{"client", "config", "script", "function", "object", "memory",
		"xinfo", "acl", "cluster", "command", "latency", "module", "pubsub", "slowlog", "xgroup"}
)

// Facts the flags do not carry, kept by name whatever the table says.
var (
	// blocksUnflagged: WAIT blocks (on the replicas' acknowledgements) but
	// Redis 7.0 does not flag it "blocking"; Valkey 8 does.
	blocksUnflagged = []string{"wait"}
)

// fallbackCommands is the knowledge used until a table is loaded.
var fallbackCommands = fromLists(fallbackBlocking, fallbackSubscribe, fallbackContainers)

func fromLists(blocking, subscribe, containers []string) *commands {
	c := &commands{kinds: make(map[string]kind, len(byName)+len(blocking)+len(subscribe)),
		blocks: make(map[string]bool, len(blocking)), containers: make(map[string]bool, len(containers))}
	for _, n := range blocking {
		c.blocks[n] = true
		c.kinds[n] = kDedicated
		if keyspec.BlocksOnlyWithOption(n) {
			c.kinds[n] = kXRead
		}
	}
	// Every subscribe-family command, including UNSUBSCRIBE: on a RESP3
	// connection even an UNSUBSCRIBE without subscriptions answers with
	// push messages, one per channel named.
	for _, n := range subscribe {
		c.kinds[n] = kStream
	}
	for _, n := range containers {
		c.containers[n] = true
	}
	// What the proxy handles by name comes last: a command it handles
	// itself keeps that handling whatever its flags say.
	for n, k := range byName {
		c.kinds[n] = k
	}
	return c
}

// fromTable derives the same knowledge from Valkey's table: a command
// flagged "blocking" blocks, one flagged "pubsub" and "noscript" is of the
// subscribe family, one with subcommands is a container; blocksUnflagged
// and byName are added as in the fallback.
func fromTable(t *keyspec.Table) *commands {
	var blocking, subscribe, containers []string
	t.Commands(func(c *keyspec.Command) bool {
		switch {
		case c.Flags.Has(keyspec.Blocking):
			blocking = append(blocking, c.Name)
		case c.Flags.Has(keyspec.Pubsub | keyspec.Noscript):
			subscribe = append(subscribe, c.Name)
		}
		if c.Subcommands != nil {
			containers = append(containers, c.Name)
		}
		return true
	})
	for _, n := range blocksUnflagged {
		if t.LookupString(n) != nil {
			blocking = append(blocking, n)
		}
	}
	c := fromLists(blocking, subscribe, containers)
	c.table = t
	return c
}

// cmds is the command knowledge now: derived from the loaded table, or the
// fallback while there is none. Two atomic loads on the command path; the
// derivation runs once per table.
func (p *Proxy) cmds() *commands {
	c := p.known.Load()
	t := p.decider.Load().Table
	if t == nil {
		if c == nil {
			return fallbackCommands
		}
		return c
	}
	if c == nil || c.table != t {
		c = fromTable(t)
		p.known.Store(c)
	}
	return c
}

// kind returns the kind of a command name in any letter case.
func (c *commands) kind(name []byte) kind { return lookup(c.kinds, name) }
