-- Reentrant hash lock, released by its owner: the owner id is a field
-- holding a hold count. KEYS[1] lock, KEYS[2] channel;
-- ARGV[1] message, ARGV[2] lease ms, ARGV[3] owner id.
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local holds = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if holds > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], ARGV[1])
return 1
