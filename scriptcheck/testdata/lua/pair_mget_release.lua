-- Two locks taken together are released together.
local v = redis.call('MGET', KEYS[1], KEYS[2])
if v[1] == ARGV[1] and v[2] == ARGV[1] then
  return redis.call('DEL', KEYS[1], KEYS[2])
end
return 0
