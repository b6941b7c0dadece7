package commands

// Label is a command's place among the labels of the per-command metrics
// (lockproxy_command_total{command} ...): the top-level command names of
// valkey-server 8.0 and redis-server 7.0, and LOCKPROXY, each its own
// label; every other name (a typo, a module's command, a newer server's)
// is LabelUnknown, so the number of series stays bounded whatever
// clients send. LabelOf looks a name up; LabelNames are the labels,
// indexed by Label.
type Label uint16

// LabelUnknown is every name not in LabelNames.
const LabelUnknown Label = 0

// LabelNames are the labels, lower-case as Valkey's COMMAND LIST writes
// them, indexed by Label: "unknown" first. Read-only.
var LabelNames = [...]string{"unknown",
	"acl",
	"append",
	"asking",
	"auth",
	"bgrewriteaof",
	"bgsave",
	"bitcount",
	"bitfield",
	"bitfield_ro",
	"bitop",
	"bitpos",
	"blmove",
	"blmpop",
	"blpop",
	"brpop",
	"brpoplpush",
	"bzmpop",
	"bzpopmax",
	"bzpopmin",
	"client",
	"cluster",
	"command",
	"config",
	"copy",
	"dbsize",
	"debug",
	"decr",
	"decrby",
	"del",
	"discard",
	"dump",
	"echo",
	"eval",
	"eval_ro",
	"evalsha",
	"evalsha_ro",
	"exec",
	"exists",
	"expire",
	"expireat",
	"expiretime",
	"failover",
	"fcall",
	"fcall_ro",
	"flushall",
	"flushdb",
	"function",
	"geoadd",
	"geodist",
	"geohash",
	"geopos",
	"georadius",
	"georadius_ro",
	"georadiusbymember",
	"georadiusbymember_ro",
	"geosearch",
	"geosearchstore",
	"get",
	"getbit",
	"getdel",
	"getex",
	"getrange",
	"getset",
	"hdel",
	"hello",
	"hexists",
	"hget",
	"hgetall",
	"hincrby",
	"hincrbyfloat",
	"hkeys",
	"hlen",
	"hmget",
	"hmset",
	"hrandfield",
	"hscan",
	"hset",
	"hsetnx",
	"hstrlen",
	"hvals",
	"incr",
	"incrby",
	"incrbyfloat",
	"info",
	"keys",
	"lastsave",
	"latency",
	"lcs",
	"lindex",
	"linsert",
	"llen",
	"lmove",
	"lmpop",
	"lockproxy",
	"lolwut",
	"lpop",
	"lpos",
	"lpush",
	"lpushx",
	"lrange",
	"lrem",
	"lset",
	"ltrim",
	"memory",
	"mget",
	"migrate",
	"module",
	"monitor",
	"move",
	"mset",
	"msetnx",
	"multi",
	"object",
	"persist",
	"pexpire",
	"pexpireat",
	"pexpiretime",
	"pfadd",
	"pfcount",
	"pfdebug",
	"pfmerge",
	"pfselftest",
	"ping",
	"psetex",
	"psubscribe",
	"psync",
	"pttl",
	"publish",
	"pubsub",
	"punsubscribe",
	"quit",
	"randomkey",
	"readonly",
	"readwrite",
	"rename",
	"renamenx",
	"replconf",
	"replicaof",
	"reset",
	"restore",
	"restore-asking",
	"role",
	"rpop",
	"rpoplpush",
	"rpush",
	"rpushx",
	"sadd",
	"save",
	"scan",
	"scard",
	"script",
	"sdiff",
	"sdiffstore",
	"select",
	"set",
	"setbit",
	"setex",
	"setnx",
	"setrange",
	"shutdown",
	"sinter",
	"sintercard",
	"sinterstore",
	"sismember",
	"slaveof",
	"slowlog",
	"smembers",
	"smismember",
	"smove",
	"sort",
	"sort_ro",
	"spop",
	"spublish",
	"srandmember",
	"srem",
	"sscan",
	"ssubscribe",
	"strlen",
	"subscribe",
	"substr",
	"sunion",
	"sunionstore",
	"sunsubscribe",
	"swapdb",
	"sync",
	"time",
	"touch",
	"ttl",
	"type",
	"unlink",
	"unsubscribe",
	"unwatch",
	"wait",
	"waitaof",
	"watch",
	"xack",
	"xadd",
	"xautoclaim",
	"xclaim",
	"xdel",
	"xgroup",
	"xinfo",
	"xlen",
	"xpending",
	"xrange",
	"xread",
	"xreadgroup",
	"xrevrange",
	"xsetid",
	"xtrim",
	"zadd",
	"zcard",
	"zcount",
	"zdiff",
	"zdiffstore",
	"zincrby",
	"zinter",
	"zintercard",
	"zinterstore",
	"zlexcount",
	"zmpop",
	"zmscore",
	"zpopmax",
	"zpopmin",
	"zrandmember",
	"zrange",
	"zrangebylex",
	"zrangebyscore",
	"zrangestore",
	"zrank",
	"zrem",
	"zremrangebylex",
	"zremrangebyrank",
	"zremrangebyscore",
	"zrevrange",
	"zrevrangebylex",
	"zrevrangebyscore",
	"zrevrank",
	"zscan",
	"zscore",
	"zunion",
	"zunionstore",
}

// NumLabels is how many labels there are.
const NumLabels = len(LabelNames)

// maxLabelLen is the longest name in LabelNames.
const maxLabelLen = 24

// labelSlots is an open-addressed table of the labels by the FNV-1a hash
// of their name: a lookup hashes the lower-cased name once and compares
// one or two names, cheaper than a map on every command's path. Its size
// is a power of two at least four times the labels, so probes are short.
const labelSlots = 1024

var _ [labelSlots - 4*NumLabels]struct{} // room enough

var bySlot = func() (t [labelSlots]Label) {
	for i, n := range LabelNames {
		if len(n) > maxLabelLen {
			panic("commands: label longer than maxLabelLen: " + n)
		}
		if i == int(LabelUnknown) {
			continue
		}
		j := labelHash([]byte(n)) & (labelSlots - 1)
		for t[j] != LabelUnknown {
			j = (j + 1) & (labelSlots - 1)
		}
		t[j] = Label(i)
	}
	return t
}()

func labelHash(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// LabelOf is the label of a command name in any letter case. It does not
// allocate.
func LabelOf(name []byte) Label {
	var buf [maxLabelLen]byte
	l, ok := Lower(buf[:], name)
	if !ok {
		return LabelUnknown
	}
	for j := labelHash(l) & (labelSlots - 1); ; j = (j + 1) & (labelSlots - 1) {
		c := bySlot[j]
		if c == LabelUnknown || LabelNames[c] == string(l) {
			return c
		}
	}
}
