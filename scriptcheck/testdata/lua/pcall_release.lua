-- Release through pcall: a failed read is reported, not raised.
local ok, current = pcall(redis.call, 'GET', KEYS[1])
if not ok then
  return redis.error_reply('LOCKREAD ' .. tostring(current))
end
if current ~= ARGV[1] then
  return 0
end
return redis.pcall('DEL', KEYS[1])
