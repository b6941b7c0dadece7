-- "Acquire" without NX: overwrites the holder's token.
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
