-- The lock key is built from a job key; the check and the delete are on
-- the same built name.
local lk = KEYS[1] .. ':lock'
if redis.call('GET', lk) == ARGV[1] then
  redis.call('DEL', lk)
end
redis.call('DEL', KEYS[1] .. ':lease')
return 1
