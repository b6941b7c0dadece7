-- lockproxy's monitor inside a function library (see monitor_lib.go).
-- Comment lines go before it is sent, and it is sent on one line, as a
-- script's monitor is (monitor.lua): the library is "#!lua ...\nlocal
-- redis, server, _G, getfenv, setfenv, loadstring, load, newproxy, ARGV,
-- setmetatable = (function() <this> end)(); <line 2 of the library>...",
-- so the library's code is the chunk's own top level, after this
-- statement: it cannot close anything of the monitor's nor run before it,
-- and it sees none of the locals below, only the ten returned at the end.
--
-- A library's chunk runs once, at FUNCTION LOAD, where Valkey gives it no
-- global but redis (register_function, log, the LOG_ constants and the
-- versions; server too on Valkey): this part only defines functions and
-- tables then. Everything that needs another global (setmetatable,
-- coroutine, string, ...) is made at the first call of one of the
-- library's functions (init), and kept: a library's upvalues live as long
-- as the library.
--
-- Each function is registered twice: under its own name, for a call that
-- did not come through lockproxy (direct: it may write no lock, no key a
-- fence guards and none of lockproxy's keys, by the rules the library was
-- loaded under), and under name__lockproxy, which lockproxy calls with
-- the same extra arguments as a monitored EVAL's, then the rules'
-- patterns and a trailer that counts them.
local __lockproxy_lib = true
local LR = redis
local X, na, L, FA, direct = nil, 0, 0, 0, true
-- The rules' Lua patterns when the library was loaded: locks, guarded
-- keys, lockproxy's fence keys, and whether on_flush is reject.
local BL, BG, BO, BF = @PL@, @PG@, @PO@, @FR@
local PL, PG, PO, FR = BL, BG, BO, BF
-- G: Valkey's globals table (_G); GE: the environment of the library's
-- functions, a table over G where a function library runs.
local find, select, type, G, GE
local env, CM, slow = {}, nil, nil
-- P3: the running function chose RESP3 (redis.setresp: sealedSR); SR
-- its setresp, made at the first use.
local P3, SR = false, nil
-- pm: does s match one of the patterns in P?
local function pm(s, P)
  for i = 1, #P do
    if find(s, P[i]) then return true end
  end
  return false
end
@CORE@
local R = {log = LR.log, LOG_DEBUG = LR.LOG_DEBUG, LOG_VERBOSE = LR.LOG_VERBOSE, LOG_NOTICE = LR.LOG_NOTICE, LOG_WARNING = LR.LOG_WARNING, REDIS_VERSION = LR.REDIS_VERSION, REDIS_VERSION_NUM = LR.REDIS_VERSION_NUM}
-- What the library calls at load time that Valkey offers only at run
-- time reads the load-time redis's field when called: Valkey's own error
-- (Script attempted to access nonexistent global variable 'call').
local RUNTIME = {'call', 'pcall', 'setresp', 'set_repl', 'replicate_commands', 'sha1hex', 'error_reply', 'status_reply', 'acl_check_cmd', 'breakpoint', 'debug'}
for i = 1, #RUNTIME do
  local k = RUNTIME[i]
  R[k] = function(...) return LR[k](...) end
end
-- S, A: a chunk's server and ARGV (functions have no ARGV).
local S, A = R, nil
local gf, sf, np, ls, ld, SM, SMR
-- init, at the first call: redis (R) becomes the monitor's (call and
-- pcall checked, the rest Valkey's run-time redis), and _G (env) the
-- sealed table over Valkey's globals.
local init
init = function()
  G = _G
  find, select, type = string.find, rawget(G, 'select'), rawget(G, 'type')
  GE = rawget(G, 'getfenv') and rawget(G, 'getfenv')(init) or G
  for _, k in ipairs({'log', 'LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', 'LOG_WARNING', 'REDIS_VERSION', 'REDIS_VERSION_NUM', 'register_function'}) do
    rawset(R, k, nil)
  end
  for _, k in ipairs(RUNTIME) do rawset(R, k, nil) end
  -- R holds no call or pcall of its own: a write to them goes to
  -- Valkey's redis, which refuses it as Valkey does.
  CM = {__call = coroutine.wrap(co), __index = function(_, k)
      if k == 'call' then return R elseif k == 'pcall' then return run end
      if k == 'setresp' then
        return SR or sealedSR(function(f) SR = f end)
      end
      return redis[k]
    end,
    __newindex = function(_, k, v) redis[k] = v end, __metatable = false}
  setmetatable(R, CM)
  SMR = sealedSM(function(t) return rawequal(t, R) or rawequal(t, env) end)
  setmetatable(env, {__index = G, __newindex = G, __metatable = getmetatable(G)})
  rawset(env, '_G', env)
  rawset(env, 'redis', R)
  if rawget(G, 'server') then rawset(env, 'server', R) end
  if rawget(G, 'getfenv') then
    rawset(env, 'getfenv', gf)
    rawset(env, 'setfenv', sf)
  end
  if rawget(G, 'newproxy') then rawset(env, 'newproxy', np) end
  rawset(env, 'loadstring', ls)
  rawset(env, 'load', ld)
  rawset(env, 'setmetatable', SM)
end
-- enter runs one call of a function: cb the library's callback, x
-- whether it was called by its lockproxy name. Its arguments end with
-- lockproxy's when the last one is the trailer: "lockproxy-fcall" and
-- the counts of locks, fence arguments, fence keys, lock patterns,
-- guard patterns, own patterns, and the flush mode. The callback gets
-- the client's keys and a copy of the client's arguments.
local function enter(cb, keys, args, x)
  if not CM then init() end
  X, P3 = args, false
  local n = #args
  local t = x and n > 0 and args[n]
  local l, fa, fk, nl, ng, no, fr
  if type(t) == 'string' then
    l, fa, fk, nl, ng, no, fr = string.match(t, '^lockproxy%-fcall (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) ([01])$')
  end
  if l then
    L, FA = tonumber(l), tonumber(fa)
    nl, ng, no = tonumber(nl), tonumber(ng), tonumber(no)
    local p = n - 1 - nl - ng - no
    na = p - 3 - 6 * L - FA - tonumber(fk)
    if na < 0 then error('lockproxy: malformed call', 0) end
    PL, PG, PO = {unpack(args, p + 1, p + nl)}, {unpack(args, p + nl + 1, p + nl + ng)}, {unpack(args, p + nl + ng + 1, p + nl + ng + no)}
    FR, direct = fr == '1', false
  else
    L, FA, na, PL, PG, PO, FR, direct = 0, 0, n, BL, BG, BO, BF, true
  end
  local A
  if na > 4000 then
    A = {}
    for i = 1, na do A[i] = args[i] end
  else
    A = {unpack(args, 1, na)}
  end
  return cb(keys, A)
end
local function wrap(cb, x)
  return function(keys, args) return enter(cb, keys, args, x) end
end
-- spellings lists k in every letter case, k itself first: Valkey reads
-- register_function's named arguments in any (strcasecmp). Only the
-- library API is in scope while a library loads (no next, type or
-- string), and a table built then has no metatable, so a library's
-- table is read by trying each spelling, a raw read.
local function spellings(k)
  local at, up, all = {}, {}, {}
  for i = 1, #k do
    local c = k:sub(i, i)
    if c ~= c:upper() then at[#at + 1], up[i] = i, c:upper() end
  end
  for m = 0, 2 ^ #at - 1 do
    local s, j, bits = '', 1, m
    for i = 1, #k do
      if i == at[j] then
        s = s .. (bits % 2 == 1 and up[i] or k:sub(i, i))
        bits, j = (bits - bits % 2) / 2, j + 1
      else
        s = s .. k:sub(i, i)
      end
    end
    all[m + 1] = s
  end
  return all
end
-- named is t's named argument k: lower case first, then the rest.
local function named(t, k)
  local v = t[k]
  if v ~= nil then return v end
  local all = spellings(k)
  for i = 2, #all do
    v = t[all[i]]
    if v ~= nil then return v end
  end
end
local CALLBACK
-- register_function registers the callback's two wrappers: Valkey checks
-- the name, flags and fields with the first. In the table form, every
-- spelling of callback the table holds is wrapped for the first (so none
-- reaches Valkey unchecked, whichever Valkey reads) and put back after;
-- the second is a new table of the four named arguments.
R.register_function = function(a, b, ...)
  if a == nil and b == nil then return LR.register_function() end
  if (...) ~= nil or a == nil then return LR.register_function(a, b, ...) end
  if b ~= nil then
    LR.register_function(a, wrap(b, false))
    return LR.register_function(a .. '__lockproxy', wrap(b, true))
  end
  local name, cb = named(a, 'function_name'), named(a, 'callback')
  -- Without a name or a callback in any spelling Valkey refuses the
  -- table as it is, with its own words.
  if name == nil or cb == nil then return LR.register_function(a) end
  CALLBACK = CALLBACK or spellings('callback')
  local held = {}
  for i = 1, #CALLBACK do
    local k = CALLBACK[i]
    local v = a[k]
    if v ~= nil then held[k], a[k] = v, wrap(v, false) end
  end
  LR.register_function(a)
  for i = 1, #CALLBACK do
    local k = CALLBACK[i]
    if held[k] ~= nil then a[k] = held[k] end
  end
  LR.register_function({function_name = name .. '__lockproxy', callback = wrap(cb, true), flags = named(a, 'flags'), description = named(a, 'description')})
end
-- setmetatable: Valkey's at load time (where there is none, its error);
-- at run time, raising Valkey's readonly-table error for redis and _G.
SM = function(t, m)
  if not SMR then return setmetatable(t, m) end
  return SMR(t, m)
end
-- The stand-ins of getfenv, setfenv, newproxy, loadstring and load: a
-- monitored script's (monitor.lua's, between @@stand-ins and @@end).
@STANDINS@
-- The library's ten names: env, the sealed _G, is filled at init.
return R, S, env, gf, sf, ls, ld, np, A, SM
