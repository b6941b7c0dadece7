-- The command comes from the caller: it may be DEL.
return redis.call(ARGV[1], KEYS[1])
