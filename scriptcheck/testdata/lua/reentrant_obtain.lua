-- Obtain that lets the holder take its lock again: tokens share a prefix
-- of ARGV[3] bytes per owner. ARGV[1] token, ARGV[2] ttl ms, ARGV[3] prefix length.
local n = tonumber(ARGV[3])
if redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2]) then
  return redis.call('pttl', KEYS[1])
end
if n > 0 and redis.call('getrange', KEYS[1], 0, n - 1) == string.sub(ARGV[1], 1, n) then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  return redis.call('pttl', KEYS[1])
end
return false
