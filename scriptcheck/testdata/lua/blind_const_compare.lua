-- Compares with a constant: every holder's lock holds 'locked'.
if redis.call('GET', KEYS[1]) == 'locked' then
  return redis.call('DEL', KEYS[1])
end
return 0
