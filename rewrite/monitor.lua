-- lockproxy's monitor (see monitor.go). Comment lines go before it is
-- sent. It comes after the client's body, which is the chunk's first
-- thing: "local __lockproxy_f = function(...) <body>\nend\n", so none of
-- the locals below is in the body's scope. Every name the functions
-- handed to the body use is an upvalue read here, before the body runs:
-- a setfenv on one of them changes nothing.
local R0, G, X, K0 = redis, _G, ARGV, KEYS
local type, select, tostring, tonumber, rawequal, error, pcall, next = type, select, tostring, tonumber, rawequal, error, pcall, next
local find, lower, upper, sub, match, gsub = string.find, string.lower, string.upper, string.sub, string.match, string.gsub
local unpack, setmetatable, getmetatable, rawset = unpack, setmetatable, getmetatable, rawset
local rgetfenv, rsetfenv, rload, rloadstring = getfenv, setfenv, load, loadstring
local cowrap, yield = coroutine.wrap, coroutine.yield
local rpcall, rset_repl, REPL_ALL = R0.pcall, R0.set_repl, R0.REPL_ALL
local na = #X - @NX@
local repl, env, CM, slow = REPL_ALL, nil, nil, nil
-- hot: may the argument name a lock, a guarded key or one of lockproxy's
-- own keys? (Patterns that match at least every such key.)
local function hot(a) return @HOT@ end
local function scan(n, ...)
  if n > 16 then
    local t = {...}
    for i = 1, n do
      local a = t[i]
      if type(a) == 'number' then a = tostring(a) end
      if type(a) == 'string' and hot(a) then return true end
    end
    return false
  end
  for i = 1, n do
    local a = select(i, ...)
    if type(a) == 'number' then a = tostring(a) end
    if type(a) == 'string' and hot(a) then return true end
  end
  return false
end
-- mk makes the checks of a call whose arguments are hot, once per run
-- and only in a run that makes one.
local function mk()
@FNS@
local LB, FA0, FK0 = na + 2, na + 2 + 5 * @L@, na + 2 + 5 * @L@ + @FA@
local function refuse(code, what) return {err = code .. ' lockproxy refused ' .. what} end
local function q(k)
  if #k > 100 then k = sub(k, 1, 100) .. '...' end
  return '"' .. gsub(k, '[%c"\\]', '?') .. '"'
end
-- writes: do a key's flags (GETKEYSANDFLAGS's, status replies: tables;
-- in RESP3 a set, whose elements are its keys) say the call writes it?
local function flag(f)
  if type(f) == 'table' then f = f.ok end
  return f == 'RW' or f == 'OW' or f == 'RM'
end
local function writes(fl)
  local s = fl.set
  if s then
    for f in next, s do
      if flag(f) then return true end
    end
    return false
  end
  for i = 1, #fl do
    if flag(fl[i]) then return true end
  end
  return false
end
local function own(k) return @OWN@ end
local function lockish(k) return @LOCK@ end
local function guardish(k) return @GUARD@ end
local function declared(k)
  for j = 1, @L@ do
    if X[LB + 5 * (j - 1)] == k then return j end
  end
end
-- strval: a key's string value (false: absent), and whether it holds
-- another type (then its value reads as '').
local function strval(k)
  local v = rpcall('GET', k)
  if type(v) == 'table' then
    if v.err and sub(v.err, 1, 9) == 'WRONGTYPE' then return '', true end
    return false, false
  end
  return v or false, false
end
-- shows: does the script's ARGV carry the lock's token, its value (a
-- string lock) or one of its fields (a Redisson-style hash lock)?
local function shows(k, v, other)
  if not other then
    for i = 1, na do
      if X[i] == v then return true end
    end
    return false
  end
  local t = rpcall('TYPE', k)
  if type(t) == 'table' and t.ok == 'hash' then
    for i = 1, na do
      if rpcall('HEXISTS', k, X[i]) == 1 then return true end
    end
  end
  return false
end
local function nx(lc, n, ...)
  if lc == 'setnx' then return true end
  if lc ~= 'set' then return false end
  for i = 4, n do
    local a = select(i, ...)
    if type(a) == 'string' and lower(a) == 'nx' then return true end
  end
  return false
end
-- after keeps a declared lock's records true after a call that may have
-- changed it: a grant for a lock the call took, the caller's record gone
-- with a lock it released, moved with a lease it changed.
local function after(j, was)
  local b = LB + 5 * (j - 1)
  local key, ck, rk, owner, keep = X[b], X[b + 1], X[b + 2], X[b + 3], tonumber(X[na + 1])
  local now = rpcall('GET', key)
  if type(now) == 'table' then now = now.err ~= nil and sub(now.err, 1, 9) == 'WRONGTYPE' and '' end
  if not was then
    if now then
      local gr = redis.call('INCR', ck)
      local e, ms = redis.call('PEXPIRETIME', key)
      if e > 0 then ms = e - redis.call('PTTL', key) else
        local t = redis.call('TIME')
        e, ms = 0, t[1] * 1000 + math.floor(t[2] / 1000)
      end
      local fresh = redis.call('EXISTS', rk) == 0
      redis.call('HSET', rk, owner, string.format('%d %d %d ', gr, ms, e) .. now)
      if not fresh then
        settle(rk, ms, keep, owner)
      elseif e > 0 then
        redis.call('PEXPIREAT', rk, e + keep)
      end
    end
    return
  end
  local r = rpcall('HGET', rk, owner)
  local rg, re, rv
  if type(r) == 'string' then rg, re, rv = string.match(r, '^(%d+) %d+ (%d+) (.*)$') end
  if not (rg and rv == was and rpcall('GET', ck) == rg) then return end
  if not now then
    redis.call('HDEL', rk, owner)
    if re == '0' and redis.pcall('PTTL', rk) == -1 then
      local t = redis.call('TIME')
      settle(rk, t[1] * 1000 + math.floor(t[2] / 1000), keep, '')
    end
    return
  end
  local e, ms = redis.call('PEXPIRETIME', key)
  if e < 0 then e = 0 end
  if now ~= rv or e ~= tonumber(re) then
    if e > 0 then ms = e - redis.call('PTTL', key) else
      local t = redis.call('TIME')
      ms = t[1] * 1000 + math.floor(t[2] / 1000)
    end
    local rec = parse(r)
    rec.v, rec.e = now, e
    put(rk, owner, rec)
    settle(rk, ms, keep, nil)
  end
end
-- fencecheck runs the fence check the proxy prepared for a guarded key
-- among KEYS; undeclared: there is none.
local function fencecheck(k)
  if @FA@ == 0 then return nil, nil, true end
  local ki, ai = FK0, FA0 + 2
  for i = 1, tonumber(X[FA0 + 1]) do
    local c = tonumber(X[ai])
    if X[ai + 3] == k then
      local e, _, m = fence(X, X, ki, ai, X[FA0], 1)
      if e and sub(e.err, 1, 9) == 'UNFENCED ' then
        e = refuse('UNFENCED', 'a write to ' .. q(k) .. ' inside a script: this client holds no grant of a lock that guards it (unfenced_writes: reject); acquire the lock first')
      end
      return e, m
    end
    ki, ai = ki + 3 * c, ai + 4
  end
  return nil, nil, true
end
return function(n, ...)
  local cmd = ...
  local lc = type(cmd) == 'string' and lower(cmd) or ''
  local kf = rpcall('COMMAND', 'GETKEYSANDFLAGS', ...)
  if type(kf) == 'table' and kf.err then
    local e = kf.err
    if find(e, 'no key arguments', 1, true) or find(e, 'Invalid command specified', 1, true) or find(e, 'Invalid number of arguments', 1, true) then return rpcall(...) end
    return refuse('LOCKED', upper(lc) .. ' inside a script: Valkey could not say which of its arguments are keys (' .. e .. '), and one of them may be a lock')
  end
  local xdb = lc == 'move' or lc == 'migrate'
  if lc == 'copy' then
    for i = 4, n do
      local a = select(i, ...)
      if type(a) == 'string' and lower(a) == 'db' then xdb = true end
    end
  end
  local pend, marks, seen
  for i = 1, #kf do
    local key, fl = kf[i][1], kf[i][2]
    if writes(fl) then
      local what = upper(lc) .. ' of ' .. q(key) .. ' inside a script'
      if own(key) then
        return refuse('LOCKED', what .. ": it is one of lockproxy's own keys (a grant counter, owner records, fencing marks or a WAIT's key), which only lockproxy's scripts may change")
      end
      local j = declared(key)
      if xdb and (j or lockish(key) or guardish(key)) then
        return refuse('LOCKED', what .. ': it would move a lock or a key a lock guards to another database or server, where lockproxy cannot check it')
      end
      if j then
        local was, other = strval(key)
        local b = LB + 5 * (j - 1)
        local mode = X[b + 4]
        if was and mode ~= 'observe' and not nx(lc, n, ...) then
          local rec = rpcall('HGET', X[b + 2], X[b + 3])
          local g, v
          if type(rec) == 'string' then g, v = match(rec, '^(%d+) %d+ %d+ (.*)$') end
          if not ((g and v == was and rpcall('GET', X[b + 1]) == g) or shows(key, was, other) or (not g and sub(mode, -1) == '+')) then
            return refuse('NOTOWNER', what .. ": this client holds no grant of the lock, and the script was not given the lock's token (its value, or a Redisson-style lock's owner field) in ARGV; pass the token in ARGV, as the lock libraries' release scripts do")
          end
        end
        seen = seen or {}
        if not seen[j] then
          seen[j] = true
          pend = pend or {}
          pend[#pend + 1] = j
          pend[#pend + 1] = was
        end
      elseif lockish(key) then
        return refuse('LOCKED', what .. ": it is a lock's key and none of the script's KEYS and ARGV; pass the lock's key in KEYS, so that lockproxy can check who holds it")
      elseif guardish(key) then
        local e, m, undeclared = fencecheck(key)
        if undeclared then
          return refuse('UNFENCED', what .. ": a lock's fence guards it and it is none of the script's KEYS and ARGV; pass it in KEYS, so that lockproxy can check the writer's fencing token")
        end
        if e then return e end
        if m and #m > 0 then
          marks = marks or {}
          for x = 1, #m do marks[#marks + 1] = m[x] end
        end
      end
    end
  end
  local r = rpcall(...)
  if (pend or marks) and not (type(r) == 'table' and r.err) then
    if repl ~= REPL_ALL then rset_repl(REPL_ALL) end
    if pend then
      for i = 1, #pend, 2 do after(pend[i], pend[i + 1]) end
    end
    if marks then mark(marks) end
    if repl ~= REPL_ALL then rset_repl(repl) end
  end
  return r
end
end
-- run: the body's redis.pcall, and what its redis.call runs.
local function run(...)
  local n = select('#', ...)
@FLUSH@
  if n < 2 or not scan(n - 1, select(2, ...)) then return rpcall(...) end
  slow = slow or mk()
  return slow(n, ...)
end
-- The body's redis.call is a callable table whose call is a coroutine's
-- C function: an error it raises is raised from a C function the body
-- called, so Valkey names the body's line in user_script:LINE.
local function co(_, ...)
  local ok, r = pcall(run, ...)
  while true do
    if not ok or type(r) == 'table' and r.err then
      CM.__call = cowrap(co)
      error(r)
    end
    ok, r = pcall(run, select(2, yield(r)))
  end
end
CM = {__call = cowrap(co), __metatable = false}
local R = setmetatable({call = setmetatable({}, CM), pcall = run, set_repl = function(m)
  repl = m
  return rset_repl(m)
end}, {__index = R0, __newindex = R0, __metatable = false})
local A = nil
if na > 4000 then
  A = {}
  for i = 1, na do A[i] = X[i] end
else
  A = {unpack(X, 1, na)}
end
env = setmetatable({KEYS = K0, ARGV = A, redis = R, server = R,
  getfenv = function(f)
    if f == nil then f = 1 end
    if type(f) == 'number' and f > 0 then f = f + 1 end
    local e = rgetfenv(f)
    if rawequal(e, G) then return env end
    return e
  end,
  setfenv = function(f, t)
    if type(f) == 'number' then
      -- Level 0 is the Lua state's own environment, shared by every
      -- later script: Valkey 8.0.1 cannot run another script after
      -- setfenv(0, {}).
      if f == 0 then error('setfenv(0) is refused: it would change the environment of every later script', 2) end
      if f > 0 then f = f + 1 end
    end
    return rsetfenv(f, t)
  end,
  loadstring = function(s, name)
    local f, e = rloadstring(s, name)
    if f then rsetfenv(f, env) end
    return f, e
  end,
  load = function(s, name)
    local f, e = rload(s, name)
    if f then rsetfenv(f, env) end
    return f, e
  end}, {__index = G, __newindex = G, __metatable = getmetatable(G)})
rawset(env, "_G", env)
rsetfenv(__lockproxy_f, env)
return __lockproxy_f(...)
