-- Queue complete in EchoMQ's style: refuse a stale attempt count.
-- KEYS[1] active zset, KEYS[2] job hash, KEYS[3] done list;
-- ARGV[1] job id, ARGV[2] the attempt count the worker was given.
local att = redis.call('HGET', KEYS[2], 'attempts')
if not att then
  return 0
end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE complete token mismatch')
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'state', 'done')
redis.call('LPUSH', KEYS[3], ARGV[1])
return 1
