package luaeval

// The scripts lockproxy sends (or their reference shapes), shared by the
// offline tests and the differential tests so that both check the same
// text.
const (
	// releaseScript is the canonical token-checked release that replaces a
	// blind DEL: KEYS[1]=lock, ARGV[1]=token.
	releaseScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`

	// acquireScript takes the lock with SET NX PX and, only on success,
	// bumps the never-expiring fencing counter. It returns SET's own reply
	// so the client sees +OK or a nil exactly as for SET NX.
	// KEYS[1]=lock, KEYS[2]=fence counter, ARGV[1]=token, ARGV[2]=lease ms.
	acquireScript = `local r = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
if r then
  redis.call("INCR", KEYS[2])
end
return r`

	// renewScript extends the lease only for the holder of the token.
	// KEYS[1]=lock, ARGV[1]=token, ARGV[2]=lease ms.
	renewScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
else
  return 0
end`

	// fencedWriteScript applies a write to a guarded key only when the
	// caller's fencing token is at least the highest one recorded.
	// KEYS[1]=guarded key, KEYS[2]=highest-token key, ARGV[1]=token,
	// ARGV[2]=value.
	fencedWriteScript = `local token = tonumber(ARGV[1])
local highest = tonumber(redis.call("GET", KEYS[2]) or "0")
if token == nil then
  return redis.error_reply("ERR fencing token is not a number")
end
if token < highest then
  return redis.error_reply("STALE fencing token " .. ARGV[1] .. " < " .. highest)
end
redis.call("SET", KEYS[2], ARGV[1])
return redis.call("SET", KEYS[1], ARGV[2])`

	// claimScript is an EchoMQ-style claim: count the attempt, mark the job
	// active, record its lease deadline. KEYS[1]=job hash, KEYS[2]=active
	// zset, ARGV[1]=lease deadline (score), ARGV[2]=job id.
	claimScript = `local attempts = redis.call("HINCRBY", KEYS[1], "attempts", 1)
redis.call("HSET", KEYS[1], "state", "active")
redis.call("ZADD", KEYS[2], ARGV[1], ARGV[2])
return attempts`

	// completeScript finishes a job only for the claim whose attempt
	// number (the token) is current. KEYS as claimScript, ARGV[1]=token,
	// ARGV[2]=job id.
	completeScript = `local attempts = redis.call("HGET", KEYS[1], "attempts")
if attempts ~= ARGV[1] then
  return redis.error_reply('EMQSTALE complete token mismatch')
end
redis.call("HSET", KEYS[1], "state", "done")
redis.call("ZREM", KEYS[2], ARGV[2])
return redis.status_reply("OK")`
)
