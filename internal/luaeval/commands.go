package luaeval

import "strings"

// cmdCtx is one command invocation.
type cmdCtx struct {
	s    *Store
	now  int64    // unix ms; frozen for a whole script, as Valkey does
	resp int      // protocol the reply is built for (client's, or the script's)
	name string   // lower-case command name, for error messages
	args []string // args[0] is the command name as sent
}

// command describes one implemented command. arity follows Valkey's
// convention: n > 0 means exactly n arguments (name included), n < 0 at
// least -n.
type command struct {
	arity int
	write bool
	fn    func(*cmdCtx) reply
}

func (c command) arityOK(n int) bool {
	if c.arity > 0 {
		return n == c.arity
	}
	return n >= -c.arity
}

var commands map[string]command

func init() {
	// Filled in init because the handlers refer back to the table
	// indirectly (through Store.doLocked from scripts).
	commands = map[string]command{
		// strings
		"get":    {2, false, cmdGet},
		"set":    {-3, true, cmdSet},
		"setnx":  {3, true, cmdSetNX},
		"setex":  {4, true, cmdSetEX},
		"psetex": {4, true, cmdPSetEX},
		"getset": {3, true, cmdGetSet},
		"getdel": {2, true, cmdGetDel},
		"getex":  {-2, true, cmdGetEx},
		"mget":   {-2, false, cmdMGet},
		"mset":   {-3, true, cmdMSet},
		"incr":   {2, true, cmdIncr},
		"decr":   {2, true, cmdDecr},
		"incrby": {3, true, cmdIncrBy},
		"decrby": {3, true, cmdDecrBy},
		// keys and expiry
		"del":         {-2, true, cmdDel},
		"unlink":      {-2, true, cmdDel},
		"exists":      {-2, false, cmdExists},
		"type":        {2, false, cmdType},
		"expire":      {-3, true, cmdExpire},
		"pexpire":     {-3, true, cmdPExpire},
		"expireat":    {-3, true, cmdExpireAt},
		"pexpireat":   {-3, true, cmdPExpireAt},
		"persist":     {2, true, cmdPersist},
		"ttl":         {2, false, cmdTTL},
		"pttl":        {2, false, cmdPTTL},
		"expiretime":  {2, false, cmdExpireTime},
		"pexpiretime": {2, false, cmdPExpireTime},
		// hashes
		"hget":    {3, false, cmdHGet},
		"hmget":   {-3, false, cmdHMGet},
		"hset":    {-4, true, cmdHSet},
		"hmset":   {-4, true, cmdHMSet},
		"hsetnx":  {4, true, cmdHSetNX},
		"hincrby": {4, true, cmdHIncrBy},
		"hexists": {3, false, cmdHExists},
		"hdel":    {-3, true, cmdHDel},
		"hgetall": {2, false, cmdHGetAll},
		"hlen":    {2, false, cmdHLen},
		// sorted sets
		"zadd":          {-4, true, cmdZAdd},
		"zrem":          {-3, true, cmdZRem},
		"zscore":        {3, false, cmdZScore},
		"zcard":         {2, false, cmdZCard},
		"zrangebyscore": {-4, false, cmdZRangeByScore},
		// server
		"ping":     {-1, false, cmdPing},
		"echo":     {2, false, cmdEcho},
		"dbsize":   {1, false, cmdDBSize},
		"time":     {1, false, cmdTime},
		"flushall": {-1, true, cmdFlush},
		"flushdb":  {-1, true, cmdFlush},
		"command":  {-1, false, cmdCommand},
	}
}

// Error texts shared by many commands (Valkey's shared.* objects).
const (
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotInt    = "ERR value is not an integer or out of range"
	errNotFloat  = "ERR value is not a valid float"
	errSyntax    = "ERR syntax error"
	errOverflow  = "ERR increment or decrement would overflow"
)

func wrongArity(name string) reply {
	return errorReply("ERR wrong number of arguments for '" + name + "' command")
}

// noScriptCommands are the commands Valkey 8.0 flags "noscript", with
// their arity: from a script Valkey checks arity before refusing them.
var noScriptCommands = map[string]int{
	"auth": -2, "bgrewriteaof": 1, "bgsave": -1, "debug": -2, "discard": 1,
	"eval": -3, "eval_ro": -3, "evalsha": -3, "evalsha_ro": -3, "exec": 1,
	"failover": -1, "fcall": -3, "fcall_ro": -3, "hello": -1, "monitor": 1,
	"multi": 1, "psubscribe": -2, "psync": -3, "punsubscribe": -1, "quit": -1,
	"replconf": -1, "replicaof": 3, "reset": 1, "role": 1, "save": 1,
	"shutdown": -1, "slaveof": 3, "ssubscribe": -2, "subscribe": -2,
	"sunsubscribe": -1, "sync": 1, "unsubscribe": -1, "unwatch": 1, "watch": -2,
}

// realCommands is Valkey 8.0.1's top-level command list (COMMAND LIST).
// A name in it that luaeval does not implement gets luaeval's own
// "not implemented" error; any other name gets Valkey's unknown-command
// error, which is then exactly what the server would say.
var realCommands = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`acl append asking auth bgrewriteaof bgsave
	bitcount bitfield bitfield_ro bitop bitpos blmove blmpop blpop brpop
	brpoplpush bzmpop bzpopmax bzpopmin client cluster command config copy
	dbsize debug decr decrby del discard dump echo eval eval_ro evalsha
	evalsha_ro exec exists expire expireat expiretime failover fcall fcall_ro
	flushall flushdb function geoadd geodist geohash geopos georadius
	georadius_ro georadiusbymember georadiusbymember_ro geosearch
	geosearchstore get getbit getdel getex getrange getset hdel hello hexists
	hget hgetall hincrby hincrbyfloat hkeys hlen hmget hmset hrandfield hscan
	hset hsetnx hstrlen hvals incr incrby incrbyfloat info keys lastsave
	latency lcs lindex linsert llen lmove lmpop lolwut lpop lpos lpush lpushx
	lrange lrem lset ltrim memory mget migrate module monitor move mset msetnx
	multi object persist pexpire pexpireat pexpiretime pfadd pfcount pfdebug
	pfmerge pfselftest ping psetex psubscribe psync pttl publish pubsub
	punsubscribe quit randomkey readonly readwrite rename renamenx replconf
	replicaof reset restore restore-asking role rpop rpoplpush rpush rpushx
	sadd save scan scard script sdiff sdiffstore select set setbit setex setnx
	setrange shutdown sinter sintercard sinterstore sismember slaveof slowlog
	smembers smismember smove sort sort_ro spop spublish srandmember srem sscan
	ssubscribe strlen subscribe substr sunion sunionstore sunsubscribe swapdb
	sync time touch ttl type unlink unsubscribe unwatch wait waitaof watch xack
	xadd xautoclaim xclaim xdel xgroup xinfo xlen xpending xrange xread
	xreadgroup xrevrange xsetid xtrim zadd zcard zcount zdiff zdiffstore
	zincrby zinter zintercard zinterstore zlexcount zmpop zmscore zpopmax
	zpopmin zrandmember zrange zrangebylex zrangebyscore zrangestore zrank
	zrem zremrangebylex zremrangebyrank zremrangebyscore zrevrange
	zrevrangebylex zrevrangebyscore zrevrank zscan zscore zunion zunionstore`) {
		m[n] = true
	}
	return m
}()
