-- Release in the shape the Redis docs and redsync use: delete only while
-- the key still holds our token.
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end
