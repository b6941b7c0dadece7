package scriptcheck

import (
	"sync/atomic"

	"github.com/lockproxy/lockproxy/keyspec"
)

// What the analysis knows of the commands a script calls comes from three
// places, looked up in this order (lookupCommand):
//
//  1. byName: what no key spec says. The commands handled one by one in
//     redisCall (SET's options, HDEL's fields, COPY's REPLACE, ...), the
//     creations (SETNX, HSETNX, MSETNX: their specs, OW/RW+INSERT, are
//     APPEND's and MSET's), and GETDEL and MOVE, which delete the key
//     while their specs (RW+ACCESS+DELETE, RW+ACCESS+UPDATE) are LPOP's and
//     a value update's.
//  2. The server's command table, once the proxy has loaded it (UseTable):
//     key positions and effects from the key specs (derive). A command of
//     a newer Valkey or a module is then known the day the server has it.
//  3. fallback: the same facts written out, for the analysis without a
//     server (lockproxy lint, the unit tests) and for the commands whose
//     specs derive cannot read (keynum and keyword searches, containers
//     such as OBJECT). TestFallbackAgrees checks it against the tables of
//     valkey-server 8 and redis-server 7.0.

// keyPos says which arguments of a command (after its name) are keys.
type keyPos uint8

const (
	posNone    keyPos = iota // no keys (PUBLISH's channel is not a key)
	posFirst                 // the first argument
	posAll                   // every argument
	posPairs                 // arguments 1, 3, 5, ... (MSET)
	posSpecial               // handled in redisCall
	posFlush                 // FLUSHALL, FLUSHDB, SWAPDB: every key of a database
	posSpecs                 // the ranges in cmdSpec.ranges (derived from key specs)
)

type cmdSpec struct {
	pos    keyPos
	op     Op         // OpNone for reads
	ranges []keyRange // posSpecs only
}

// keyRange is one key spec of fixed shape: keys at argument first (1 is the
// first after the command name), then every step up to last (negative:
// counted from the end, -1 the last argument), each with op.
type keyRange struct {
	first, last, step int
	op                Op
}

var (
	// byName always wins (see above).
	byName = map[string]cmdSpec{}
	// fallback is used without a table, and for what the table cannot say.
	fallback = map[string]cmdSpec{}
	// fromTable is the loaded table's knowledge (UseTable); nil before.
	fromTable atomic.Pointer[map[string]cmdSpec]
)

// lookupCommand returns what the analysis knows of an upper-case command
// name; false for a command it does not know (its keys become Unknown).
func lookupCommand(name string) (cmdSpec, bool) {
	if s, ok := byName[name]; ok {
		return s, true
	}
	if d := fromTable.Load(); d != nil {
		if s, ok := (*d)[name]; ok {
			return s, true
		}
	}
	s, ok := fallback[name]
	return s, ok
}

// UseTable makes the analysis read key positions and effects from t, the
// command table of the Valkey the proxy is in front of; nil goes back to
// the fallback. The table is the process's: every server a proxy talks to
// runs one version. Reports already made are not redone.
func UseTable(t *keyspec.Table) {
	if t == nil {
		fromTable.Store(nil)
		return
	}
	m := make(map[string]cmdSpec, t.Len())
	t.Commands(func(c *keyspec.Command) bool {
		if s, ok := derive(c); ok {
			m[c.Upper] = s
		}
		return true
	})
	fromTable.Store(&m)
}

// derive reads a command's key positions and effects from its key specs,
// when every spec is of fixed shape (a first index and a range). Its effect
// on a key is: none for a read (and for RW+ACCESS alone, PFCOUNT's cached
// cardinality), OpExpire for a command that only changes expiries
// (keyspec's ExpiryOnly), OpDelete for RM, OpOverwrite for any other change
// of the value (keyspec's Overwrites or Deletes). Reads leave no site, so a
// command that only reads is posNone. Commands with subcommands, keynum or
// keyword searches, incomplete specs, and commands scripts may not call are
// left to the fallback.
func derive(c *keyspec.Command) (cmdSpec, bool) {
	if c.Subcommands != nil || c.Flags.Has(keyspec.Noscript) || c.Flags.Has(keyspec.MovableKeys) {
		return cmdSpec{}, false
	}
	if c.KeylessWrite() {
		return cmdSpec{pos: posFlush, op: OpDelete}, true
	}
	var ranges []keyRange
	for _, ks := range c.KeySpecs {
		if ks.Flags&keyspec.KeyNotKey != 0 {
			continue
		}
		b, f := ks.BeginSearch, ks.FindKeys
		if b.Type != keyspec.BeginSearchIndex || f.Type != keyspec.FindKeysRange || f.Limit > 1 ||
			ks.Flags&keyspec.KeyIncomplete != 0 || f.Step < 1 {
			return cmdSpec{}, false
		}
		op := OpNone
		switch fl := ks.Flags; {
		case !fl.Writes():
		case c.ExpiryOnly():
			op = OpExpire
		case fl&keyspec.KeyRM != 0:
			op = OpDelete
		case fl.Overwrites() || fl.Deletes():
			op = OpOverwrite
		default:
			continue // RW+ACCESS: PFCOUNT's cached cardinality, not the value
		}
		if op == OpNone {
			continue // a read: no site
		}
		last := f.LastKey
		if last >= 0 {
			last += b.Index
		}
		ranges = append(ranges, keyRange{first: b.Index, last: last, step: f.Step, op: op})
	}
	if len(ranges) == 0 {
		return cmdSpec{pos: posNone, op: OpNone}, true
	}
	if len(ranges) == 1 {
		r := ranges[0]
		switch {
		case r.first == 1 && r.last == 1:
			return cmdSpec{pos: posFirst, op: r.op}, true
		case r.first == 1 && r.last == -1 && r.step == 1:
			return cmdSpec{pos: posAll, op: r.op}, true
		case r.first == 1 && r.last == -1 && r.step == 2:
			return cmdSpec{pos: posPairs, op: r.op}, true
		}
	}
	return cmdSpec{pos: posSpecs, ranges: ranges}, true
}

func init() {
	add := func(pos keyPos, op Op, names ...string) {
		for _, n := range names {
			fallback[n] = cmdSpec{pos: pos, op: op}
		}
	}
	// Reads.
	add(posFirst, OpNone, "GET", "HGET", "HMGET", "HEXISTS", "HGETALL", "HLEN", "HKEYS", "HVALS",
		"HSTRLEN", "HRANDFIELD", "HSCAN", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "HTTL", "HPTTL",
		"HEXPIRETIME", "HPEXPIRETIME", "TYPE", "STRLEN", "GETRANGE", "SUBSTR", "GETBIT", "BITCOUNT",
		"BITPOS", "DUMP", "SCARD", "SISMEMBER", "SMISMEMBER", "SMEMBERS", "SRANDMEMBER", "SSCAN",
		"ZSCORE", "ZMSCORE", "ZCARD", "ZCOUNT", "ZLEXCOUNT", "ZRANGE", "ZRANGEBYSCORE", "ZRANGEBYLEX",
		"ZREVRANGE", "ZREVRANGEBYSCORE", "ZREVRANGEBYLEX", "ZRANK", "ZREVRANK", "ZRANDMEMBER", "ZSCAN",
		"LLEN", "LRANGE", "LINDEX", "LPOS", "XLEN", "XRANGE", "XREVRANGE", "XPENDING", "PFCOUNT",
		"GEOPOS", "GEODIST", "GEOHASH", "GEOSEARCH", "GEORADIUS_RO", "GEORADIUSBYMEMBER_RO", "LCS")
	add(posAll, OpNone, "MGET", "EXISTS", "TOUCH", "SINTER", "SUNION", "SDIFF", "SINTERCARD")
	add(posNone, OpNone, "PUBLISH", "SPUBLISH", "TIME", "PING", "ECHO", "DBSIZE", "RANDOMKEY",
		"SELECT", "OBJECT", "MEMORY", "COMMAND", "INFO", "LASTSAVE", "ROLE", "SCAN", "KEYS")
	// Deletes.
	add(posAll, OpDelete, "DEL", "UNLINK")
	// Expiry changes.
	add(posFirst, OpExpire, "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST",
		"HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT", "HPERSIST")
	// Overwrites: the first argument is the key changed.
	add(posFirst, OpOverwrite, "SETEX", "PSETEX", "GETSET", "APPEND", "SETRANGE",
		"INCR", "INCRBY", "DECR", "DECRBY", "INCRBYFLOAT", "HSET", "HMSET", "HINCRBY", "HINCRBYFLOAT",
		"HSETEX", "HGETEX", "HGETDEL", "SETBIT", "BITFIELD", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX", "LPOP", "RPOP",
		"LSET", "LREM", "LTRIM", "LINSERT", "SADD", "SREM", "SPOP", "ZADD", "ZREM", "ZINCRBY",
		"ZPOPMIN", "ZPOPMAX", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "ZREMRANGEBYLEX",
		"XADD", "XTRIM", "XDEL", "XACK", "XCLAIM", "XAUTOCLAIM", "XSETID", "PFADD", "PFMERGE",
		"GEOADD", "RESTORE")
	add(posPairs, OpOverwrite, "MSET")
	add(posFlush, OpDelete, "FLUSHALL", "FLUSHDB", "SWAPDB")

	// What no key spec says, whatever the table: the reads whose reply
	// redisCall follows (a value compared with a token, a field's
	// existence), the creations, and two deletions.
	for _, n := range []string{"GET", "GETRANGE", "SUBSTR", "HGET", "HEXISTS"} {
		byName[n] = cmdSpec{pos: posFirst, op: OpNone}
	}
	for _, n := range []string{"EXISTS", "MGET"} {
		byName[n] = cmdSpec{pos: posAll, op: OpNone}
	}
	byName["MSETNX"] = cmdSpec{pos: posPairs, op: OpCreate}
	byName["SETNX"] = cmdSpec{pos: posFirst, op: OpCreate}
	byName["HSETNX"] = cmdSpec{pos: posFirst, op: OpCreate}
	byName["GETDEL"] = cmdSpec{pos: posFirst, op: OpDelete}
	byName["MOVE"] = cmdSpec{pos: posFirst, op: OpDelete}
	// Each handled in redisCall.
	for _, n := range []string{"SET", "GETEX", "HDEL", "DELIFEQ", "COPY", "RENAME", "RENAMENX",
		"SMOVE", "LMOVE", "RPOPLPUSH"} {
		byName[n] = cmdSpec{pos: posSpecial}
	}
}
