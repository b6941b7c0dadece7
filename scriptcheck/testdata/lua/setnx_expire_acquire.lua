-- The old two-step acquire, made atomic by the script.
if redis.call('SETNX', KEYS[1], ARGV[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
