package commands

// Kind says how the proxy must treat a command to keep every client's
// connection state exact while most commands share upstream connections.
type Kind uint8

const (
	// Forward: carries no connection state; any shared connection with the
	// session's protocol and database can run it. The default.
	Forward Kind = iota
	// Dedicated: creates or reads state that belongs to one connection
	// (a transaction, a blocked wait, a client id): the session moves onto
	// its own upstream connection for the rest of its life.
	Dedicated
	// Stream: like Dedicated, and afterwards replies no longer pair one to
	// one with commands (SUBSCRIBE confirms once per channel, MONITOR never
	// stops), so the connection forwards replies as they arrive.
	Stream
	// Sync: SYNC and PSYNC; like Stream, and what follows is not RESP
	// any more but a replication stream: the connection becomes a byte
	// pipe both ways.
	Sync
	// XRead: dedicated only with BLOCK (a blocking read), shared otherwise.
	XRead
	Hello
	Select
	Client
	Auth
	Quit
	Reset
	// Admin: LOCKPROXY ..., answered by the proxy itself, never forwarded.
	Admin
	// Info: INFO; the proxy answers INFO lockproxy, forwards the rest.
	Info
	// Long: a command that may hold Valkey for long (SAVE, FLUSHALL,
	// FLUSHDB, DEBUG): forwarded like Forward, with the reply deadline
	// stretched as BlockingWait says.
	Long
	// Server: SCRIPT, FUNCTION and SHUTDOWN, whose KILL, STATS and
	// SHUTDOWN itself go on a connection of their own; the rest is Forward.
	Server
)

// Forwarded reports whether commands of kind k go to Valkey as they are,
// with nothing about the connection to decide: Forward, and Server and
// Long, which are Forward with one detail each.
func (k Kind) Forwarded() bool { return k == Forward || k == Server || k == Long }

// byName lists the commands the proxy handles by name: each is a behaviour
// of its own (connection state, logins, the proxy's own commands), which no
// command flag describes. Blocking and subscribe-family commands are not
// here: they come from Valkey's command table (FromTable).
var byName = map[string]Kind{
	"multi": Dedicated,
	"watch": Dedicated,

	// Cluster-mode connection flags.
	"readonly":  Dedicated,
	"readwrite": Dedicated,
	"asking":    Dedicated,

	"monitor": Stream,
	"sync":    Sync,
	"psync":   Sync,
	// REPLCONF (capa eof, rdb-only, ...) configures the replication
	// stream of the connection that sends it.
	"replconf": Dedicated,

	"hello":  Hello,
	"select": Select,
	"client": Client,
	"auth":   Auth,
	"quit":   Quit,
	"reset":  Reset,

	"lockproxy": Admin,
	"info":      Info,

	"save":     Long,
	"flushall": Long,
	"flushdb":  Long,
	"debug":    Long,

	"script":   Server,
	"function": Server,
	"shutdown": Server,
}

// clientKinds is the same for CLIENT subcommands. SETNAME, GETNAME and
// SETINFO are answered by the proxy from the session's own state (go-redis
// and other clients send them on every new connection, so they must not
// cost a dedicated connection); the rest of this list is per-connection
// state.
var clientKinds = map[string]Kind{
	"tracking":      Dedicated,
	"trackinginfo":  Dedicated,
	"getredir":      Dedicated,
	"caching":       Dedicated,
	"capa":          Dedicated,
	"import-source": Dedicated,
	"no-touch":      Dedicated, // ON; OFF on a shared connection is answered by the proxy
}

// ClientKind is the kind of a CLIENT subcommand in any letter case: Dedicated
// for per-connection state, Forward for the rest. It does not allocate.
func ClientKind(sub []byte) Kind { return lookup(clientKinds, sub) }

// lookup returns the kind of a command name in any letter case. It does not
// allocate: the map index with string(bytes) is optimised by the compiler.
func lookup(table map[string]Kind, name []byte) Kind {
	var buf [24]byte
	l, ok := Lower(buf[:], name)
	if !ok {
		return Forward
	}
	return table[string(l)]
}

// Lower copies b lower-cased into buf and returns it; ok is false when b
// does not fit (no command name is longer than 24 bytes).
func Lower(buf []byte, b []byte) ([]byte, bool) {
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
