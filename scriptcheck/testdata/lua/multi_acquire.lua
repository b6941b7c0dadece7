-- Acquire several resources at once: all must be free, then all are set.
for _, key in ipairs(KEYS) do
  if redis.call('exists', key) == 1 then
    return 0
  end
end
for _, key in ipairs(KEYS) do
  redis.call('set', key, ARGV[1], 'px', ARGV[2])
end
return #KEYS
