package commands

import (
	"sort"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
)

// The gated commands: those that reconfigure Valkey (its users, its
// configuration, its replication, its cluster, its modules, its process),
// which a deployment lets only an admin of lockproxy's run
// (admin_commands). They are derived from Valkey's own flags, per command
// and per subcommand: a command or subcommand flagged "admin" is gated,
// but for the few written out in gateExempt, each kept by name with its
// reason. A "readonly" flag would exempt one (no admin command has it in
// Valkey 8 or Redis 7.0). The ACL category @dangerous is not a criterion
// on its own: the commands in it without "admin" act on data (FLUSHALL,
// SORT, MIGRATE, RESTORE, SWAPDB: the lock rules' business) or only read
// the server's state (INFO, ROLE, LASTSAVE).

// gateExempt: the admin-flagged commands and subcommands that pass the
// gate. Each either reads the server's state without revealing a secret
// or changing anything, or is answered by lockproxy itself and never
// reaches Valkey.
var gateExempt = []string{
	// Reads of the server's state that reveal no secret (ACL LIST and
	// GETUSER show password hashes, CONFIG GET requirepass and
	// masterauth: those stay gated).
	"acl|users", "acl|log", "slowlog|get", "slowlog|len",
	"latency|doctor", "latency|graph", "latency|histogram", "latency|history", "latency|latest",
	"module|list", "cluster|count-failure-reports", "cluster|replicas", "cluster|slaves",
	"pfselftest",
	// MONITOR and the replication stream read what GET reads (the threat
	// model: a client that reads another's token is not defended
	// against); a replica may sync through lockproxy.
	"monitor", "sync", "psync", "replconf",
	// Answered by lockproxy for its own clients, never sent to Valkey
	// (proxy/clients.go): CLIENT LIST, KILL and NO-EVICT.
	"client|list", "client|kill", "client|no-evict",
}

// gateByArg: an exempt subcommand that is gated with one argument after
// it, in any letter case: ACL LOG RESET empties the log of refused logins
// (ACL LOG alone only reads it).
var gateByArg = map[string]string{"acl|log": "reset"}

// Gate values of Table.gated.
const (
	gateNone uint8 = iota
	gateAll        // the command, or the subcommand, is gated
	gateSubs       // some of the command's subcommands are (gatedSubs)
	gateArg        // the subcommand is gated with gateByArg's argument
)

// isGated applies the flags rule to one command or subcommand, by its
// full lower-case name (container|sub).
func isGated(full string, f keyspec.Flags) bool {
	if !f.Has(keyspec.Admin) || f.Has(keyspec.Readonly) {
		return false
	}
	for _, n := range gateExempt {
		if n == full {
			return false
		}
	}
	return true
}

// gatedFromTable is the gated list of a Valkey table: full lower-case
// names ("debug", "acl|setuser"), and "acl|log reset" for gateByArg's.
func gatedFromTable(t *keyspec.Table) []string {
	var out []string
	t.Commands(func(c *keyspec.Command) bool {
		if c.Subcommands == nil {
			if isGated(c.Name, c.Flags) {
				out = append(out, c.Name)
			}
			return true
		}
		for n, s := range c.Subcommands {
			full := c.Name + "|" + n
			if isGated(full, s.Flags) {
				out = append(out, full)
			} else if w, ok := gateByArg[full]; ok && s.Flags.Has(keyspec.Admin) {
				out = append(out, full+" "+w)
			}
		}
		return true
	})
	sort.Strings(out)
	return out
}

// setGated fills c's gate maps from a list as gatedFromTable makes it.
func (c *Table) setGated(list []string) {
	c.gated = make(map[string]uint8, len(list))
	c.gateHint = [25]uint32{}
	c.gatedList = append([]string(nil), list...)
	sort.Strings(c.gatedList)
	for _, n := range list {
		full, _, byArg := cut(n, ' ')
		name, _, isSub := cut(full, '|')
		if len(name) < len(c.gateHint) && name[0] >= 'a' && name[0] <= 'z' {
			c.gateHint[len(name)] |= 1 << (name[0] - 'a')
		} else {
			c.gateHint[0] = ^uint32(0) // a name the hint cannot hold: every lookup goes to the map
		}
		switch {
		case !isSub:
			c.gated[name] = gateAll
		case byArg:
			c.gated[name] = gateSubs
			c.gated[full] = gateArg
		default:
			c.gated[name] = gateSubs
			c.gated[full] = gateAll
		}
	}
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Gated reports whether a command (its name and arguments, in any letter
// case) is one that reconfigures Valkey: its name gated whole, or its
// first argument a gated subcommand (ACL LOG with RESET after it). A name
// or subcommand longer than any Valkey has is not gated: Valkey refuses
// it. It does not allocate.
func (c *Table) Gated(args [][]byte) bool {
	// Most commands are ruled out by their length and first letter.
	if n := len(args[0]); c.gateHint[0] == 0 && (n == 0 || n >= len(c.gateHint) || c.gateHint[n]&letterBit(args[0][0]) == 0) {
		return false
	}
	var buf [48]byte
	name, ok := Lower(buf[:24], args[0])
	if !ok {
		return false
	}
	switch c.gated[string(name)] {
	case gateNone:
		return false
	case gateAll:
		return true
	}
	if len(args) < 2 {
		return false // Valkey's arity error
	}
	buf[len(name)] = '|'
	sub, ok := Lower(buf[len(name)+1:], args[1])
	if !ok {
		return false
	}
	full := buf[:len(name)+1+len(sub)]
	switch c.gated[string(full)] {
	case gateAll:
		return true
	case gateArg:
		return len(args) >= 3 && resp.EqualFold(args[2], gateByArg[string(full)])
	}
	return false
}

// GatedList is the gated commands and subcommands, sorted: full
// lower-case names ("debug", "acl|setuser"), and a subcommand gated with
// one argument as "acl|log reset". Read-only; the monitor's gate is made
// of it (package rewrite), the docs print it.
func (c *Table) GatedList() []string { return c.gatedList }

// letterBit is a letter's bit in gateHint, in either case; 0 for another
// byte.
func letterBit(b byte) uint32 {
	b |= 0x20
	if b < 'a' || b > 'z' {
		return 0
	}
	return 1 << (b - 'a')
}
