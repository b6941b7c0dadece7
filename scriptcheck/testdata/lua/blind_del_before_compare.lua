-- The compare comes after the delete: too late.
local v = redis.call('GET', KEYS[1])
redis.call('DEL', KEYS[1])
if v == ARGV[1] then
  return 1
end
return 0
