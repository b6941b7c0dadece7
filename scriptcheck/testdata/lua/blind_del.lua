-- Release without a check: deletes whoever's lock is there now.
return redis.call('DEL', KEYS[1])
