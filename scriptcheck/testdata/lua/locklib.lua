#!lua name=locklib

-- A lock library: the callbacks take (keys, args) as FCALL passes them.
local function owned(key, token)
  return redis.call('GET', key) == token
end

local function release(keys, args)
  if owned(keys[1], args[1]) then
    return redis.call('DEL', keys[1])
  end
  return 0
end

local function acquire(keys, args)
  return redis.call('SET', keys[1], args[1], 'NX', 'PX', args[2])
end

redis.register_function('lock_release', release)
redis.register_function{function_name = 'lock_acquire', callback = acquire}
redis.register_function('lock_force', function(keys, args)
  return redis.call('DEL', keys[1])
end)
