-- Multi-resource release: every key must still hold the token, then all
-- of them go at once.
local tokens = redis.call('MGET', unpack(KEYS))
for i = 1, #KEYS do
  if tokens[i] ~= ARGV[1] then
    return 0
  end
end
return redis.call('DEL', unpack(KEYS))
