-- Every other key: a loop the analysis does not follow.
local n = 0
for i = 1, #KEYS, 2 do
  n = n + redis.call('DEL', KEYS[i])
end
return n
