package rewrite

import (
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/keyspec"
)

// The monitor's fast table of keys (monitor.lua's KS, @KS@): for the
// commands lock scripts use most, whether a call writes its keys and
// where they are, so that the check needs no COMMAND GETKEYSANDFLAGS for
// them. It is generated from the same key specs the Go side decides plain
// commands with (keyspec), never written by hand: ksNames only chooses
// which commands get an entry and in which order (a lookup reads the
// string up to its entry, so the commonest come first). Each entry is the
// name, "=", then r (the call only reads keys: nothing to check), n (no
// key) or w (it writes them), then which arguments are keys: 1 the first,
// * all, 2 every second. A command whose key specs are not one of these
// shapes gets no entry and is asked of Valkey, as any other.

// ksNames: the commands given an entry, commonest in lock scripts first.
var ksNames = []string{"get", "set", "del", "pexpire", "expire", "unlink", "exists", "hget", "hset", "hdel", "incr",
	"hincrby", "pttl", "ttl", "setnx", "getset", "pexpireat", "expireat", "persist", "strlen", "getrange", "type",
	"expiretime", "pexpiretime", "mget", "hmget", "hgetall", "hexists", "hlen", "hkeys", "hvals", "llen", "lrange",
	"lindex", "scard", "smembers", "sismember", "zscore", "zcard", "zrange", "zrangebyscore", "xlen", "setex",
	"psetex", "getdel", "getex", "incrby", "decr", "decrby", "incrbyfloat", "append", "setrange", "mset", "hsetnx",
	"hmset", "hincrbyfloat", "lpush", "rpush", "lpop", "rpop", "sadd", "srem", "zadd", "zrem", "zincrby", "xadd",
	"publish", "ping", "echo", "time"}

// ksEntry is a command's entry ("w1", "r*", "n", ...), and false when its
// keys are not a shape the table can say.
func ksEntry(c *keyspec.Command) (string, bool) {
	if c == nil || c.Subcommands != nil || c.Flags.Has(keyspec.MovableKeys) {
		return "", false
	}
	if len(c.KeySpecs) == 0 {
		if c.Flags.Has(keyspec.Write) {
			return "", false // a keyless write (FLUSHALL): the checks'
		}
		return "n", true
	}
	if len(c.KeySpecs) != 1 {
		return "", false
	}
	ks := c.KeySpecs[0]
	bs, fk := ks.BeginSearch, ks.FindKeys
	if ks.Flags&(keyspec.KeyNotKey|keyspec.KeyIncomplete) != 0 || bs.Type != keyspec.BeginSearchIndex || bs.Index != 1 ||
		fk.Type != keyspec.FindKeysRange || fk.Limit != 0 {
		return "", false
	}
	var pos string
	switch {
	case fk.LastKey == 0:
		pos = "1"
	case fk.LastKey == -1 && fk.Step == 1:
		pos = "*"
	case fk.LastKey == -1 && fk.Step == 2:
		pos = "2"
	default:
		return "", false
	}
	// As the checks read COMMAND GETKEYSANDFLAGS: RW, OW or RM is a
	// write. Flags that vary with the arguments (SET ... GET) count as a
	// write when one is a write; a read that may become one is asked.
	switch {
	case ks.Flags&(keyspec.KeyRW|keyspec.KeyOW|keyspec.KeyRM) != 0:
		return "w" + pos, true
	case ks.Flags&keyspec.KeyRO != 0 && ks.Flags&keyspec.KeyVariableFlags == 0:
		return "r" + pos, true
	}
	return "", false
}

// ksText is the KS string of a table: " name=entry ..." in ksNames'
// order, with a space at both ends.
func ksText(t *keyspec.Table) string {
	var b strings.Builder
	b.WriteByte(' ')
	for _, n := range ksNames {
		if e, ok := ksEntry(t.LookupString(n)); ok {
			b.WriteString(n + "=" + e + " ")
		}
	}
	return b.String()
}

var ksCache sync.Map // *keyspec.Table → string

// ksFor is the KS string of the table in force; ksFallback (generated
// from Valkey 8's table, ks_fallback.go) before one is loaded.
func ksFor(t *keyspec.Table) string {
	if t == nil {
		return ksFallback
	}
	if s, ok := ksCache.Load(t); ok {
		return s.(string)
	}
	s := ksText(t)
	ksCache.Store(t, s)
	return s
}
