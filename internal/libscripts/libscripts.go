package libscripts

// bsm/redislock's obtain and release scripts (v0.9). Obtain: KEYS[1] the
// lock; ARGV[1] the token, ARGV[2] the length of a token prefix that may
// re-take the lock (0: none), ARGV[3] the lease in ms; the reply is OK
// when it took the lock. Release: KEYS[1], ARGV[1] the token; 1 when it
// deleted the lock, else 0.
const (
	RedislockObtain = `if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end

local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
`
	RedislockRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
)

// RedislockObtainExact is bsm/redislock v0.9.4's obtain script byte for
// byte (its leading line break included, which RedislockObtain lacks):
// the text lockproxy knows (rewrite/known.go) and runs as its equivalent.
const RedislockObtainExact = "\n" + RedislockObtain
