package commands

import "github.com/lockproxy/lockproxy/keyspec"

// Table is what the proxy knows of command names: the kind of each and
// which block on the server. It is derived from Valkey's own command table
// once one is loaded (FromTable), so that a blocking or subscribe-family
// command of a newer server, or of a module, is routed right the day the
// server offers it; until then, and when Valkey cannot be reached, it is
// Fallback. Built once per keyspec.Table, read-only.
type Table struct {
	source *keyspec.Table // nil for the fallback
	kinds  map[string]Kind
	// blocks: the command may block on the server (Valkey's "blocking"
	// flag; XREAD and XREADGROUP only with BLOCK, see
	// keyspec.BlocksOnlyWithOption).
	blocks map[string]bool
	// containers: commands with subcommands, whose CLIENT LIST cmd field
	// names the subcommand too (client|list).
	containers map[string]bool
	// gated: the commands that reconfigure Valkey (gate.go), by
	// lower-case name and container|sub; gatedList the same, sorted.
	gated     map[string]uint8
	gatedList []string
	// gateHint: per name length, the first letters of gated names (bit
	// 0 for a, ...); gateHint[0] set: no hint, every lookup is made.
	gateHint [25]uint32
}

// Kind returns the kind of a command name in any letter case. It does not
// allocate.
func (c *Table) Kind(name []byte) Kind { return lookup(c.kinds, name) }

// Containers is the set of commands with subcommands, by lower-case name.
// Read-only.
func (c *Table) Containers() map[string]bool { return c.containers }

// Source is the Valkey table c was derived from; nil for Fallback.
func (c *Table) Source() *keyspec.Table { return c.source }

func fromLists(blocking, subscribe, containers, gated []string) *Table {
	c := &Table{kinds: make(map[string]Kind, len(byName)+len(blocking)+len(subscribe)),
		blocks: make(map[string]bool, len(blocking)), containers: make(map[string]bool, len(containers))}
	for _, n := range blocking {
		c.blocks[n] = true
		c.kinds[n] = Dedicated
		if keyspec.BlocksOnlyWithOption(n) {
			c.kinds[n] = XRead
		}
	}
	// Every subscribe-family command, including UNSUBSCRIBE: on a RESP3
	// connection even an UNSUBSCRIBE without subscriptions answers with
	// push messages, one per channel named.
	for _, n := range subscribe {
		c.kinds[n] = Stream
	}
	for _, n := range containers {
		c.containers[n] = true
	}
	// What the proxy handles by name comes last: a command it handles
	// itself keeps that handling whatever its flags say.
	for n, k := range byName {
		c.kinds[n] = k
	}
	c.setGated(gated)
	return c
}

// FromTable derives the same knowledge as Fallback from Valkey's table: a
// command flagged "blocking" blocks, one flagged "pubsub" and "noscript" is
// of the subscribe family, one with subcommands is a container;
// blocksUnflagged and byName are added as in the fallback; the gated
// commands are those flagged "admin" (gate.go).
func FromTable(t *keyspec.Table) *Table {
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
	c := fromLists(blocking, subscribe, containers, gatedFromTable(t))
	c.source = t
	return c
}
