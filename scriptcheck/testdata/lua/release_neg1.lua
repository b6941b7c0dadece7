-- Release that tells "no lock" (-1) from "someone else's lock" (0),
-- the way several client libraries report it.
local held = redis.call('GET', KEYS[1])
if held == false then
  return -1
end
if held ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
