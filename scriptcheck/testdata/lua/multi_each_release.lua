-- Per-key release over a set of resources: each key is deleted only if it
-- holds the token; the reply counts the keys released.
local released = 0
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('DEL', key)
    released = released + 1
  end
end
return released
