-- Queue claim in EchoMQ's style: pop the next job, bump its attempt count
-- (the fence the worker must present back), lease it.
-- KEYS[1] pending zset, KEYS[2] active zset;
-- ARGV[1] now ms, ARGV[2] lease ms, ARGV[3] job key prefix.
local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then
  return false
end
local id = popped[1]
local jk = ARGV[3] .. id
local att = redis.call('HINCRBY', jk, 'attempts', 1)
redis.call('HSET', jk, 'state', 'active')
redis.call('ZADD', KEYS[2], tonumber(ARGV[1]) + tonumber(ARGV[2]), id)
return {id, redis.call('HGET', jk, 'payload'), att}
