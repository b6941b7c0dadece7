-- The check is the wrong way round: it deletes when the lock is NOT ours.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
