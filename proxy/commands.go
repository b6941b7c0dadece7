package proxy

import (
	"github.com/lockproxy/lockproxy/keyspec"
)

// commands is what the proxy knows of command names: the kind of each
// (classify.go) and which block on the server. It is derived from Valkey's
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
