package proxy

import (
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
)

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
