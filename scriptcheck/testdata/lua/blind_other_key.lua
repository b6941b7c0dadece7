-- Checks one key, deletes another.
if redis.call('GET', KEYS[2]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
