package luaeval

import "strings"

// keyFlags are, per implemented command with keys, the flags Valkey 8.0.1's
// COMMAND GETKEYSANDFLAGS gives its keys, and which arguments are keys:
// from the first (1), every step-th, to the last (all) or only the first.
var keyFlags = map[string]struct {
	flags []string
	step  int // 0: only args[1]; n: args[1], args[1+n], ...
}{
	"get": {[]string{"RO", "access"}, 0}, "set": {[]string{"RW", "access", "update", "variable_flags"}, 0},
	"setnx": {[]string{"OW", "insert"}, 0}, "setex": {[]string{"OW", "update"}, 0}, "psetex": {[]string{"OW", "update"}, 0},
	"getset": {[]string{"RW", "access", "update"}, 0}, "getdel": {[]string{"RW", "access", "delete"}, 0},
	"getex": {[]string{"RW", "access", "update"}, 0}, "mget": {[]string{"RO", "access"}, 1},
	"mset": {[]string{"OW", "update"}, 2}, "incr": {[]string{"RW", "access", "update"}, 0},
	"decr": {[]string{"RW", "access", "update"}, 0}, "incrby": {[]string{"RW", "access", "update"}, 0},
	"decrby": {[]string{"RW", "access", "update"}, 0}, "del": {[]string{"RM", "delete"}, 1},
	"unlink": {[]string{"RM", "delete"}, 1}, "exists": {[]string{"RO"}, 1}, "type": {[]string{"RO"}, 0},
	"expire": {[]string{"RW", "update"}, 0}, "pexpire": {[]string{"RW", "update"}, 0},
	"expireat": {[]string{"RW", "update"}, 0}, "pexpireat": {[]string{"RW", "update"}, 0},
	"persist": {[]string{"RW", "update"}, 0}, "ttl": {[]string{"RO", "access"}, 0}, "pttl": {[]string{"RO", "access"}, 0},
	"expiretime": {[]string{"RO", "access"}, 0}, "pexpiretime": {[]string{"RO", "access"}, 0},
	"hget": {[]string{"RO", "access"}, 0}, "hmget": {[]string{"RO", "access"}, 0},
	"hset": {[]string{"RW", "update"}, 0}, "hmset": {[]string{"RW", "update"}, 0}, "hsetnx": {[]string{"RW", "insert"}, 0},
	"hincrby": {[]string{"RW", "access", "update"}, 0}, "hexists": {[]string{"RO"}, 0},
	"hdel": {[]string{"RW", "delete"}, 0}, "hgetall": {[]string{"RO", "access"}, 0}, "hlen": {[]string{"RO"}, 0},
	"zadd": {[]string{"RW", "update"}, 0}, "zrem": {[]string{"RW", "delete"}, 0}, "zscore": {[]string{"RO", "access"}, 0},
	"zcard": {[]string{"RO"}, 0}, "zrangebyscore": {[]string{"RO", "access"}, 0},
}

// cmdCommand implements COMMAND GETKEYSANDFLAGS for the commands luaeval
// implements (the only subcommand lockproxy's monitor sends).
func cmdCommand(c *cmdCtx) reply {
	if len(c.args) < 2 || strings.ToLower(c.args[1]) != "getkeysandflags" {
		return errorReply("ERR luaeval: command 'command' is not implemented")
	}
	if len(c.args) < 3 {
		return wrongArity("command|getkeysandflags")
	}
	args := c.args[2:]
	name := strings.ToLower(args[0])
	cmd, ok := commands[name]
	if !ok {
		if realCommands[name] {
			return errorReply("ERR luaeval: command '" + name + "' is not implemented")
		}
		return errorReply("ERR Invalid command specified")
	}
	if !cmd.arityOK(len(args)) {
		return errorReply("ERR Invalid number of arguments specified for command")
	}
	kf, ok := keyFlags[name]
	if !ok {
		return errorReply("ERR The command has no key arguments")
	}
	flags := make([]reply, len(kf.flags))
	for i, f := range kf.flags {
		flags[i] = statusReply(f)
	}
	var out []reply
	for i := 1; i < len(args); i += kf.step {
		out = append(out, arrayReply([]reply{bulkReply(args[i]), arrayReply(flags)}))
		if kf.step == 0 {
			break
		}
	}
	return arrayReply(out)
}
