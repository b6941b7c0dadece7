-- Obtain a free lock, or refresh one we already hold.
local v = redis.call('GET', KEYS[1])
if v == false then
  return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
elseif v == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return false
