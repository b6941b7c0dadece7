package scriptcheck

// keyPos says which arguments of a command (after its name) are keys.
type keyPos uint8

const (
	posNone    keyPos = iota // no keys (PUBLISH's channel is not a key)
	posFirst                 // the first argument
	posAll                   // every argument
	posPairs                 // arguments 1, 3, 5, ... (MSET)
	posSpecial               // handled in redisCall
	posFlush                 // FLUSHALL, FLUSHDB, SWAPDB: every key of a database
)

type cmdSpec struct {
	pos keyPos
	op  Op // OpNone for reads
}

// commands is what the analysis knows about the commands a script may
// call. Anything else touching a key makes that key Unknown.
var commands = map[string]cmdSpec{}

func init() {
	add := func(pos keyPos, op Op, names ...string) {
		for _, n := range names {
			commands[n] = cmdSpec{pos: pos, op: op}
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
	add(posFirst, OpDelete, "GETDEL", "MOVE")
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
	add(posPairs, OpCreate, "MSETNX")
	add(posFirst, OpCreate, "SETNX", "HSETNX")
	add(posFlush, OpDelete, "FLUSHALL", "FLUSHDB", "SWAPDB")
	// Each handled in redisCall.
	for _, n := range []string{"SET", "GETEX", "HDEL", "DELIFEQ", "COPY", "RENAME", "RENAMENX",
		"SMOVE", "LMOVE", "RPOPLPUSH"} {
		commands[n] = cmdSpec{pos: posSpecial}
	}
}
