-- The key to delete is passed as an argument, not in KEYS.
return redis.call('DEL', ARGV[1])
