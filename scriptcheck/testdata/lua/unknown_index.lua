-- Which key is deleted depends on an argument.
local k = KEYS[tonumber(ARGV[1])]
return redis.call('DEL', k)
