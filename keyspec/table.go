package keyspec

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// BeginSearchType says how a key spec finds the first key.
type BeginSearchType uint8

// Begin-search types. Unknown covers the server's "unknown" and any type
// a newer server may add: the keys then cannot be found from the spec.
const (
	BeginSearchUnknown BeginSearchType = iota
	BeginSearchIndex                   // at a fixed argument index
	BeginSearchKeyword                 // right after a keyword argument
)

// FindKeysType says how a key spec finds the keys after the first.
type FindKeysType uint8

// Find-keys types. Unknown covers the server's "unknown" and any type a
// newer server may add.
const (
	FindKeysUnknown FindKeysType = iota
	FindKeysRange                // a range from the first key
	FindKeysKeynum               // an argument gives the number of keys
)

// BeginSearch is a key spec's begin_search part.
type BeginSearch struct {
	Type BeginSearchType
	// Index is the argument index of the first key (Type == BeginSearchIndex).
	Index int
	// Keyword and StartFrom (Type == BeginSearchKeyword): the first key is
	// the argument after Keyword (matched in any letter case), searched from
	// index StartFrom towards the end, or, when StartFrom is negative, from
	// index len(args)+StartFrom towards the start.
	Keyword   string
	StartFrom int
}

// FindKeys is a key spec's find_keys part.
type FindKeys struct {
	Type FindKeysType
	// Range (Type == FindKeysRange): the last key is at first+LastKey when
	// LastKey >= 0; when negative, at len(args)+LastKey if Limit is 0, else
	// LastKey is -1 and the keys are a 1/Limit share of the remaining
	// arguments (XREAD's STREAMS k1 k2 id1 id2 has Limit 2).
	LastKey int
	Limit   int
	// Keynum (Type == FindKeysKeynum): the argument at first+KeyNumIdx holds
	// the number of keys, which start at first+FirstKey.
	KeyNumIdx int
	FirstKey  int
	// Step is the distance between keys (the server's "keystep"), for both
	// kinds.
	Step int
}

// KeySpec is one key specification of a command.
type KeySpec struct {
	Flags       KeyFlags
	Notes       string
	BeginSearch BeginSearch
	FindKeys    FindKeys
}

// Command is one entry of the server's command table, or a subcommand of a
// container command (CLIENT, OBJECT, XINFO, ...).
type Command struct {
	// Name is lower case; a subcommand is named "container|sub"
	// ("client|kill"), as COMMAND reports it.
	Name string
	// Upper is the name the client typed, in upper case, for messages and
	// records: the command's, or a subcommand's container's ("CLIENT").
	// Made once here, so that the lock path need not for every command.
	Upper string
	// Arity counts the command name (and, for a subcommand, the container
	// name): N > 0 means exactly N arguments, -N at least N.
	Arity int
	Flags Flags
	// FirstKey, LastKey, Step are the legacy key positions, kept for
	// servers or modules without key specs.
	FirstKey, LastKey, Step int
	// ACLCategories as the server lists them ("@write", "@keyspace", ...).
	ACLCategories []string
	// Tips are the command tips ("nondeterministic_output", ...).
	Tips     []string
	KeySpecs []KeySpec
	// Subcommands, keyed by lower-case subcommand name ("kill" for
	// "client|kill"); nil unless this is a container command.
	Subcommands map[string]*Command
	// Parent is the container of a subcommand, else nil.
	Parent *Command

	// Derived when the table is built, so that Keys decides without
	// looking at every spec's flags.
	hasKeySpec   bool // a spec not marked NOT_KEY exists
	varFlags     bool // a spec (not NOT_KEY) has VARIABLE_FLAGS
	expiryOnly   bool
	keylessWrite bool
}

// Table is a command table built from the server's COMMAND reply. It is
// read-only once built and safe for concurrent use.
type Table struct {
	cmds       map[string]*Command
	maxNameLen int // longest top-level or subcommand name; longer names are never found
}

// Load runs COMMAND on rdb and builds the table from the reply.
func Load(ctx context.Context, rdb redis.UniversalClient) (*Table, error) {
	reply, err := rdb.Do(ctx, "COMMAND").Slice()
	if err != nil {
		return nil, fmt.Errorf("keyspec: COMMAND: %w", err)
	}
	return FromCommandReply(reply)
}

// FromCommandReply builds a table from a COMMAND (or COMMAND INFO) reply as
// go-redis v9 returns it from Do(...).Slice(): under RESP2 key specs and
// their parts are flat field/value arrays, under RESP3 maps; both are
// accepted, as are []byte strings and other integer types. Nil entries
// (COMMAND INFO's answer for an unknown name) are skipped. Unknown command
// flags, key-spec flags and spec types are ignored or kept as Unknown so
// that a newer server's table still loads.
func FromCommandReply(reply []interface{}) (*Table, error) {
	t := &Table{cmds: make(map[string]*Command, len(reply))}
	for i, e := range reply {
		if e == nil {
			continue
		}
		c, err := parseCommand(e, nil)
		if err != nil {
			return nil, fmt.Errorf("keyspec: COMMAND entry %d: %w", i, err)
		}
		t.cmds[c.Name] = c
		t.noteLen(c.Name)
		for sub := range c.Subcommands {
			t.noteLen(sub)
		}
	}
	if len(t.cmds) == 0 {
		return nil, fmt.Errorf("keyspec: COMMAND reply has no commands")
	}
	return t, nil
}

func (t *Table) noteLen(name string) {
	if len(name) > t.maxNameLen {
		t.maxNameLen = len(name)
	}
}

// Len returns the number of top-level commands.
func (t *Table) Len() int { return len(t.cmds) }

// Commands calls f for every top-level command (not subcommands), in no
// particular order, until f returns false.
func (t *Table) Commands(f func(*Command) bool) {
	for _, c := range t.cmds {
		if !f(c) {
			return
		}
	}
}

// nameBufLen bounds the names looked up through the stack buffer; Valkey's
// longest name is under 30 bytes. A table with longer names (a module's)
// falls back to an allocating lookup.
const nameBufLen = 64

// lowerInto copies name into buf in ASCII lower case, the way the server
// folds command names (it compares them with strcasecmp in the C locale).
func lowerInto(buf *[nameBufLen]byte, name []byte) []byte {
	b := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return b
}

// find looks name up in m in any letter case without allocating when the
// name fits the stack buffer: the map index with string(bytes) does not
// copy.
func find(m map[string]*Command, name []byte, maxLen int) *Command {
	if len(name) > maxLen || len(m) == 0 {
		return nil
	}
	if len(name) > nameBufLen {
		return m[strings.ToLower(string(name))]
	}
	var buf [nameBufLen]byte
	return m[string(lowerInto(&buf, name))]
}

// Lookup returns the command named name in any letter case, or nil. A
// "container|sub" name ("CLIENT|KILL") returns the subcommand.
func (t *Table) Lookup(name []byte) *Command {
	for i, c := range name {
		if c == '|' {
			parent := find(t.cmds, name[:i], t.maxNameLen)
			if parent == nil {
				return nil
			}
			return find(parent.Subcommands, name[i+1:], t.maxNameLen)
		}
	}
	return find(t.cmds, name, t.maxNameLen)
}

// LookupString is Lookup for a string name.
func (t *Table) LookupString(name string) *Command {
	if len(name) <= nameBufLen {
		var buf [nameBufLen]byte
		n := copy(buf[:], name)
		return t.Lookup(buf[:n])
	}
	return t.Lookup([]byte(name))
}

// Command resolves a concrete command the way the server does: args[0]
// names the command; for a container command given at least two arguments,
// args[1] names the subcommand, and an unknown subcommand resolves to nil
// (the server replies "unknown subcommand"). A container alone ("CLIENT")
// resolves to the container itself, whose arity then rejects it. A
// "client|kill" spelling in args[0] is not resolved: the server does not
// either.
func (t *Table) Command(args [][]byte) *Command {
	if len(args) == 0 {
		return nil
	}
	c := find(t.cmds, args[0], t.maxNameLen)
	if c == nil || len(args) == 1 || c.Subcommands == nil {
		return c
	}
	return find(c.Subcommands, args[1], t.maxNameLen)
}

// SubcommandName returns the part after '|' of a subcommand's name ("kill"
// for "client|kill"), or the name itself.
func (c *Command) SubcommandName() string {
	if i := strings.IndexByte(c.Name, '|'); i >= 0 {
		return c.Name[i+1:]
	}
	return c.Name
}

// InCategory reports whether the command is in the ACL category cat
// ("@write" or "write", any letter case).
func (c *Command) InCategory(cat string) bool {
	cat = strings.TrimPrefix(cat, "@")
	for _, a := range c.ACLCategories {
		if strings.EqualFold(strings.TrimPrefix(a, "@"), cat) {
			return true
		}
	}
	return false
}

// ExpiryOnly reports a command that changes its keys' expiry but never
// their values, so the caller can tell "extends or drops the TTL of a lock"
// from "writes the lock". Key specs cannot tell: EXPIRE's key is RW+UPDATE
// exactly like ZADD's or HSET's. This is therefore a documented supplement
// to the specs, derived as:
//
//   - a write command in the ACL category @keyspace whose every key spec
//     (NOT_KEY ones aside) is exactly RW+UPDATE: in Valkey 8 and Redis 7
//     these are EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT and PERSIST (the other
//     RW+UPDATE commands are in @hash, @sortedset, @stream, ... and change
//     values; the other @keyspace writers have other flags);
//   - and, by name, GETEX, whose spec (RW+ACCESS+UPDATE, in @string) is
//     identical to GETSET's although it only reads the value and sets the
//     TTL.
//
// An expiry in the past deletes the key (EXPIRE k 0, GETEX k EXAT 1), so
// "expiry only" does not mean "never deletes". A future command of this
// kind outside these shapes is reported false, i.e. treated as a value
// write, which is the safe side.
func (c *Command) ExpiryOnly() bool { return c.expiryOnly }

// KeylessWrite reports a write command that names no keys yet may change
// them: FLUSHALL, FLUSHDB and SWAPDB drop or swap every key, and FUNCTION
// LOAD/DELETE/FLUSH/RESTORE replace code that later writes keys. Key
// extraction finds nothing for these, so a caller protecting keys must
// treat them as touching every key.
func (c *Command) KeylessWrite() bool { return c.keylessWrite }

// derive computes the summary fields from the parsed flags and specs.
func (c *Command) derive() {
	allRWUpdate := true
	for _, s := range c.KeySpecs {
		if s.Flags&KeyNotKey != 0 {
			continue
		}
		c.hasKeySpec = true
		if s.Flags&KeyVariableFlags != 0 {
			c.varFlags = true
		}
		if s.Flags&^(KeyIncomplete|KeyVariableFlags) != KeyRW|KeyUpdate {
			allRWUpdate = false
		}
	}
	c.expiryOnly = (c.hasKeySpec && allRWUpdate && c.Flags&Write != 0 && c.InCategory("keyspace")) ||
		c.Name == "getex"
	c.keylessWrite = c.Flags&Write != 0 && !c.hasKeySpec && c.Flags&MovableKeys == 0 && c.FirstKey == 0
}
