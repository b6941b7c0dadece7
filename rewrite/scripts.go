package rewrite

import (
	"crypto/sha1"
	"encoding/hex"
)

// Script is a Lua script lockproxy sends, with its SHA1 for EVALSHA.
type Script struct {
	Name string
	Body string
	SHA  string
}

func newScript(name, body string) *Script {
	sum := sha1.Sum([]byte(body))
	return &Script{Name: name, Body: body, SHA: hex.EncodeToString(sum[:])}
}

// Acquire runs the client's SET ... NX and, only when it took the lock,
// mints the next grant number: INCR of a counter that never expires, in the
// lock's hash slot. The grant number is the fencing token; the proxy turns
// the integer back into the +OK the client asked for.
//
// KEYS[1] lock key, KEYS[2] counter key; ARGV: value, then SET's options.
//
// Errors are Valkey's own, word for word (pcall, not call, which would add
// the script's name): a SET with a bad option answers as SET would. If the
// counter cannot be incremented (it holds something else), the lock just
// taken is given back, so no grant goes unrecorded.
var Acquire = newScript("acquire", `local ok = redis.pcall('SET', KEYS[1], unpack(ARGV))
if type(ok) == 'table' and ok.err then return ok end
if not ok then return false end
local grant = redis.pcall('INCR', KEYS[2])
if type(grant) == 'table' and grant.err then redis.call('DEL', KEYS[1]) end
return grant`)

// Release is DEL/UNLINK made safe: plain keys are deleted as asked; each lock
// key only while it still holds the caller's value AND its counter still
// shows the caller's grant (values like "1" or a timestamp are not unique,
// grant numbers are). The reply is the number of keys deleted, as DEL's.
//
// KEYS: plain keys, then (lock, counter) pairs. ARGV[1] DEL or UNLINK,
// ARGV[2] the number of plain keys, then (value, grant) per lock.
var Release = newScript("release", `local n = tonumber(ARGV[2])
local deleted = 0
if n > 0 then deleted = redis.call(ARGV[1], unpack(KEYS, 1, n)) end
local j = 3
for i = n + 1, #KEYS, 2 do
  if redis.call('GET', KEYS[i]) == ARGV[j] and redis.call('GET', KEYS[i + 1]) == ARGV[j + 1] then
    deleted = deleted + redis.call(ARGV[1], KEYS[i])
  end
  j = j + 2
end
return deleted`)

// Guarded runs one command on a lock key only while the caller still holds
// it (same value and grant): lease renewal (PEXPIRE, EXPIRE, PERSIST, GETEX)
// and the holder's own SET. Otherwise it answers what the command answers
// when there is nothing to act on: 0 for the expiry commands, nil for SET
// and GETEX.
//
// KEYS[1] lock key, KEYS[2] counter key; ARGV: value, grant, "0" or "nil",
// command name, then the command's arguments after the key.
var Guarded = newScript("guarded", `if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('GET', KEYS[2]) == ARGV[2] then
  return redis.pcall(ARGV[4], KEYS[1], unpack(ARGV, 5))
end
if ARGV[3] == '0' then return 0 end
return false`)

// Fenced runs a write to keys a lock guards only when the writer's fencing
// token passes, and nothing is written when it does not. Per check:
//
//	current  the token must still be the lock's latest grant (the counter):
//	         EchoMQ's attempts fence;
//	highest  the token must be at least the highest this guarded key has
//	         accepted, which the write then records: Kleppmann's fence.
//
// KEYS: per check, the counter and the hash of highest tokens; then the
// command's own keys (declared for cluster routing). ARGV[1] the number of
// checks; per check: token, "current" or "highest", the guarded key's name;
// then the command and its arguments.
//
// The command runs under RESP3 conversion (redis.setresp(3)) so that its
// reply keeps its type for RESP3 clients (a double stays a double); one
// limit remains: a null array (LPOP key count on a missing key) comes back
// as a null bulk to RESP2 clients.
var Fenced = newScript("fenced", `redis.setresp(3)
local n = tonumber(ARGV[1])
for i = 1, n do
  local token = tonumber(ARGV[3 * i - 1])
  local mode, name = ARGV[3 * i], ARGV[3 * i + 1]
  if mode == 'current' then
    local latest = tonumber(redis.call('GET', KEYS[2 * i - 1]) or '0')
    if token ~= latest then
      return redis.error_reply('STALE lockproxy refused a write to ' .. name .. ' with fencing token ' .. ARGV[3 * i - 1] .. ': the lock was granted again since, to token ' .. latest .. '; acquire the lock again before writing')
    end
  else
    local high = tonumber(redis.call('HGET', KEYS[2 * i], name) or '0')
    if token < high then
      return redis.error_reply('STALE lockproxy refused a write to ' .. name .. ' with fencing token ' .. ARGV[3 * i - 1] .. ': it has already accepted token ' .. high .. '; acquire the lock again before writing')
    end
  end
end
local reply = redis.pcall(unpack(ARGV, 3 * n + 2))
if type(reply) == 'table' and reply.err then return reply end
for i = 1, n do
  if ARGV[3 * i] == 'highest' then
    local high = tonumber(redis.call('HGET', KEYS[2 * i], ARGV[3 * i + 1]) or '0')
    if tonumber(ARGV[3 * i - 1]) > high then
      redis.call('HSET', KEYS[2 * i], ARGV[3 * i + 1], ARGV[3 * i - 1])
    end
  end
end
return reply`)

// Scripts lists every script lockproxy sends, for tests and preloading.
var Scripts = []*Script{Acquire, Release, Guarded, Fenced}
