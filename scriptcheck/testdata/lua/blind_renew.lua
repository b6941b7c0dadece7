-- Renewal without a check: extends a successor's lease just as well.
return redis.call('PEXPIRE', KEYS[1], ARGV[1])
