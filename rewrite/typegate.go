package rewrite

import (
	"strings"

	"github.com/lockproxy/lockproxy/keyspec"
)

// Valkey's own errors come first: a refused command that works on one data
// type (LPOP, SREM, HDEL, ZADD, XADD, ...) would get WRONGTYPE from Valkey
// when a key it reads holds another type, and change nothing. Whether that
// is so depends on the keys' types now, which only Valkey knows; so the
// refusal is not answered by the proxy but by TypeGate, in Valkey, in one
// step: WRONGTYPE when a key holds a type the command cannot work on, the
// refusal otherwise (a Redisson-style hash lock refuses a stranger's HDEL
// as before, and an absent key too: LPUSH would create it).

// TypeGate is the refusal of a typed command, decided in Valkey. KEYS: the
// keys Valkey checks the type of; ARGV[1] the refusal's marker
// (TypeGateRefused), the rest the TYPE names the command works on. Sent as
// EVAL (refusals are rare; it is not among the preloaded Scripts).
const TypeGate = `for i = 1, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' then
    local fits = false
    for j = 2, #ARGV do
      if ARGV[j] == t then fits = true end
    end
    if not fits then
      return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
    end
  end
end
return redis.error_reply(ARGV[1])`

// TypeGateRefused is TypeGate's answer when the refusal stands.
const TypeGateRefused = "LOCKED 1"

// typeOfCategory maps an ACL category of data type to the TYPE name of the
// values it works on. @string, @bitmap and @hyperloglog are left out: a
// lock is a string, so a string command on it is refused as it always was
// (a HyperLogLog command on a plain string has an error of its own).
var typeOfCategory = map[string]string{
	"list": "list", "set": "set", "hash": "hash",
	"sortedset": "zset", "geo": "zset", "stream": "stream",
}

// TypeCheck tells, for a command the decider refused, whether Valkey
// would check its keys' types first: the command works on one data type
// (its ACL categories) that a lock, a string, is not. It returns the keys
// whose type Valkey checks (those the command reads or changes in place:
// RO or RW; a key it overwrites or removes whole is not checked) and the
// TYPE names they may hold. ok is false for every other command, and for
// one whose keys only Valkey can list (SORT): the refusal is then the
// proxy's alone.
func (d *Decider) TypeCheck(args [][]byte) (keys [][]byte, types []string, ok bool) {
	if d.Table == nil || len(args) == 0 {
		return nil, nil, false
	}
	cmd := d.Table.Command(args)
	if cmd == nil {
		return nil, nil, false
	}
	for _, c := range cmd.ACLCategories {
		if t, ok := typeOfCategory[strings.ToLower(strings.TrimPrefix(c, "@"))]; ok {
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		return nil, nil, false
	}
	found, st := cmd.Keys(args, nil)
	if st != keyspec.OK && st != keyspec.VariableFlags {
		return nil, nil, false
	}
	for _, k := range found {
		if k.Flags&(keyspec.KeyRO|keyspec.KeyRW) != 0 {
			keys = append(keys, args[k.Index])
		}
	}
	return keys, types, len(keys) > 0
}
