-- Extend a lock's lease, adding to what is left or replacing it.
-- ARGV[1] token, ARGV[2] ms, ARGV[3] "1" to replace the ttl.
local current = redis.call('get', KEYS[1])
if not current or current ~= ARGV[1] then
  return 0
end
local left = redis.call('pttl', KEYS[1])
if left < 0 then
  left = 0
end
if ARGV[3] == '1' then
  redis.call('pexpire', KEYS[1], ARGV[2])
else
  redis.call('pexpire', KEYS[1], left + tonumber(ARGV[2]))
end
return 1
