-- lockproxy's monitor (see monitor.go). Comment lines go before it is
-- sent, and it is sent on one line (no line of it may need its line
-- break): the chunk is "local redis, server, _G, getfenv, setfenv,
-- loadstring, load, newproxy, ARGV, setmetatable = (function() <this>
-- end)(); <body>", so the body is the chunk's own top level, keeps its
-- line numbers, cannot close anything of the monitor's, and sees none of
-- the locals below: only the ten the monitor returns at the end.
--
-- Valkey runs scripts in a shared Lua state whose globals are read-only:
-- every closure and table below is made again at every run, so there are
-- few of them. The checks and the records' code are made at the first call
-- with a hot argument; the records' and the fence's helpers only on their
-- paths.
local G, X = _G, ARGV
local find, select, type = string.find, select, type
local na = #X - @NX@
local env, CM, slow = nil, nil, nil
-- P3: the body chose RESP3 for its calls' replies (redis.setresp: sealedSR).
local P3 = false
-- @@core: from here to @@seal, the checks, shared with a library's
-- monitor (monitor_lib.lua), which fills the placeholders with variables.
-- mk makes the checks of a call with a hot argument (does an argument
-- name a lock, a guarded key or one of lockproxy's own keys?) at the
-- first such call: what only they use is made inside it, so a run makes
-- none of it until then (each closure made with upvalues costs a search
-- of the open upvalues, about 1.5k instructions a run here).
local function mk()
-- The records' helpers, and refusal (the error of a refused
-- call), made only on a path that needs them.
local fns
local function helpers()
@FNS@
@DELAYFNS@
-- flushed runs an allowed FLUSHALL or FLUSHDB of the script's (run
-- sends them here under on_flush: allow; reject refused them) so that the
-- grant counters it deletes start again above every token handed out
-- before, as the Flush script (grant.go) and the proxy do for a client's:
-- each database it empties that held keys gets the epoch hash, one epoch
-- above the highest of its hash, every other it empties and the proxy's
-- clue (X[na + 2]), with the time ("changed", where a rule's lock delay
-- starts). A FLUSHALL finds the script's database first (by a key of
-- lockproxy's it sets there, which the flush deletes) and selects it
-- again after. In front of a cluster nothing in Valkey survives a flush
-- to raise the epoch from: refused. A library's function called around
-- lockproxy (no clues) flushes as asked.
local function flushed(c, ...)
  local rc = X[na + 3]
  if rc == nil then
    if P3 then redis.setresp(3) end
    local r = redis.pcall(...)
    if P3 then redis.setresp(2) end
    return r
  end
  if rc == '!' then
    return {err = 'LOCKED lockproxy refused ' .. string.upper(c) .. ' inside a script in front of a cluster: the grant counters it deletes would hand out fencing tokens again; send ' .. string.upper(c) .. ' on its own, outside a script'}
  end
  local dbs, e, cur, probe = {}, math.max(tonumber(X[na + 2]) or -1, 0), nil, '{lockproxy}:lockproxy:flush'
  local function read(db, n)
    if n <= 0 then return end
    dbs[#dbs + 1] = db
    local h = tonumber(redis.call('HGET', 'lockproxy:epoch', 'epoch'))
    if h and h > e then e = h end
  end
  local ok, r = pcall(function()
    if c == 'flushdb' then return read(false, redis.call('DBSIZE')) end
    redis.call('SET', probe, '1')
    local all = {}
    for db in string.gmatch(redis.call('INFO', 'keyspace'), 'db(%d+):') do all[#all + 1] = tonumber(db) end
    for i = 1, #all do
      redis.call('SELECT', all[i])
      if redis.call('EXISTS', probe) == 1 then cur = all[i] break end
    end
    for i = 1, #all do
      redis.call('SELECT', all[i])
      local n = redis.call('DBSIZE')
      if all[i] == cur then n = n - 1 end
      read(all[i], n)
    end
    redis.call('SELECT', cur)
  end)
  if ok then
    if P3 then redis.setresp(3) end
    r = redis.pcall(...)
    if P3 then redis.setresp(2) end
    ok = not (type(r) == 'table' and r.err)
  elseif type(r) ~= 'table' then
    r = {err = tostring(r)}
  end
  if not ok then
    if cur then redis.pcall('SELECT', cur) end
    if c == 'flushall' then redis.pcall('DEL', probe) end
  elseif #dbs > 0 then
    local t = redis.call('TIME')
    local ch = string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000))
    for i = 1, #dbs do
      if dbs[i] then redis.call('SELECT', dbs[i]) end
      redis.call('HSET', 'lockproxy:epoch', 'epoch', string.format('%d', e + 1), 'run', rc, 'changed', ch)
    end
    if cur then redis.call('SELECT', cur) end
  end
  return r
end
-- asked is the lease a call gives a lock, read from its arguments (SET's
-- and GETEX's PX/EX/PXAT/EXAT, SETEX's, PSETEX's, the EXPIRE family's):
-- the time it ends (Valkey's clock, ms), 0 for none (PERSIST, a SET
-- without an expiry, SETNX, any other call that creates the lock), 'keep'
-- when the call leaves the lease as it is (KEEPTTL, GETEX without one),
-- false when an argument is not a number (Valkey answers that); and now.
local function asked(lc, n, ...)
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  if lc == 'set' or lc == 'getex' then
    for i = n, lc == 'set' and 4 or 3, -1 do
      local o = select(i, ...)
      -- Valkey reads an option as a C string, up to a NUL byte.
      o = type(o) == 'string' and string.upper(string.match(o, '^%Z*'))
      if o == 'PX' or o == 'EX' or o == 'PXAT' or o == 'EXAT' then
        local v = tonumber((select(i + 1, ...)))
        if not v then return false, now end
        if o == 'PX' then return now + v, now elseif o == 'EX' then return now + 1000 * v, now elseif o == 'PXAT' then return v, now end
        return 1000 * v, now
      elseif o == 'KEEPTTL' then
        return 'keep', now
      elseif o == 'PERSIST' then
        return 0, now
      end
    end
    if lc == 'getex' then return 'keep', now end
    return 0, now
  end
  local m = ({psetex = 1, setex = 1000, pexpire = 1, expire = 1000, pexpireat = 1, expireat = 1000})[lc]
  if not m then return 0, now end
  local v = tonumber((select(3, ...)))
  if not v then return false, now end
  if lc == 'pexpireat' or lc == 'expireat' then return m * v, now end
  return now + m * v, now
end
-- delay is an acquisition's check under its rule's max_lease d (ms), as
-- acquireDelay (scripts.go) checks a SET NX's: the lease the call asks
-- for (asked) must be at most d, else LEASE; within d of the last change
-- of primary (one primary: the epoch hash's "changed"; a cluster: the
-- slot's mark) the lock is not granted: a SET NX or SETNX (nx) gets the
-- answer of a lock held by someone else and does not run, any other call
-- LOCKDELAY. It returns whether the call is refused, and what it gets
-- then.
local function delay(lc, key, d, b, nx, n, ...)
  local e, now = asked(lc, n, ...)
  if e == false then return false end
  local K = string.upper(lc) .. ' of "' .. string.gsub(string.sub(key, 1, 100), '[%c"\\]', '?') .. '" inside a script'
  if e == 'keep' or e == 0 or e - now > d then
    return true, {err = 'LEASE lockproxy refused ' .. K .. ': it takes a lock without a lease of at most ' .. d .. ' ms (the rule\'s max_lease); ask for a shorter lease (PX ' .. d .. ' or less) in the call that takes it, and renew it'}
  end
  local known, ch = tonumber(X[na + 2]), nil
  if X[na + 3] ~= '!' then ch = select(2, epoch(X[na + 3], known, true)) else ch = slotChanged(X[b + 5], known) end
  if not (ch and now < ch + d) then return false end
  if nx then
    if lc == 'setnx' then return true, 0 end
    if P3 then return true, nil end
    return true, false
  end
  return true, {err = 'LOCKDELAY lockproxy refused ' .. K .. ': it takes a lock lockproxy does not grant for ' .. (ch + d - now) .. ' ms more: the primary changed, and a grant it lost may still be held (lock delay, the rule\'s max_lease); retry then'}
end
-- renewal is a held lock's lease change under its rule's max_lease d: a
-- lease longer than d, or none, is refused (LEASE), as for the commands
-- sent alone: the lock delay after a change of primary assumes no holder
-- believes in a lease longer than d. A lease that ends at once (the lock
-- deleted) passes.
local function renewal(lc, key, d, n, ...)
  local e, now = asked(lc, n, ...)
  if e == false or e == 'keep' or e ~= 0 and e - now <= d then return nil end
  return {err = 'LEASE lockproxy refused ' .. string.upper(lc) .. ' of "' .. string.gsub(string.sub(key, 1, 100), '[%c"\\]', '?') .. '" inside a script: it would give the lock a lease longer than ' .. d .. ' ms, or none (the rule\'s max_lease, which the lock delay after a change of primary assumes); renew it for at most ' .. d .. ' ms at a time'}
end
-- fwd3 runs the client's call in RESP3, the protocol the body chose (the
-- monitor's own calls run in RESP2, see run; in RESP2 the check calls
-- redis.pcall itself).
local function fwd3(...)
  redis.setresp(3)
  local r = redis.pcall(...)
  redis.setresp(2)
  return r
end
-- refusal: the error of a refused call.
local function refusal(code, lc, key, tail)
  if #key > 100 then key = string.sub(key, 1, 100) .. '...' end
  if string.sub(tail, 1, 1) ~= ':' then tail = ': ' .. tail end
  return {err = code .. ' lockproxy refused ' .. string.upper(lc) .. ' of "' .. string.gsub(key, '[%c"\\]', '?') .. '" inside a script' .. tail}
end
-- own is the owner field a hash lock's record names (its token): the
-- first of the script's ARGV that is a field of the hash now, "mode"
-- (a Redisson read-write lock's, which every holder's hash has) never;
-- '' when there is none (a string lock, or no such field yet).
local function own(key)
  for x = 1, na do
    if X[x] ~= 'mode' and redis.pcall('HEXISTS', key, X[x]) == 1 then return X[x] end
  end
  return ''
end
return {parse = parse, put = put, settle = settle, refusal = refusal, flushed = flushed, delay = delay, renewal = renewal, fwd3 = fwd3, own = own}
end
-- records keeps the declared locks' records true after a call that may
-- have changed them, and writes the fence marks of a write. For each lock
-- the check noted (pend; one loop here, not a closure of its own, which
-- each run would make): a grant for a lock the call took, the caller's
-- record gone with a lock it released, moved with a lease it changed.
-- rg, re, rv, r: the caller's record as the check read it (rg nil: it
-- holds no current grant). b: where the lock's entry starts in X. How,
-- read by the check from the call, says what the call's reply (out)
-- tells: 'nx' (SET ... NX without GET, or SETNX; v its value when a
-- string) whether it set the key, so the check read nothing before it;
-- 'del' (DEL or UNLINK of this key alone) that the key is gone when it
-- counted 1. ok is false when the call was interrupted (see mk): an 'nx'
-- call then counts as having set the key only if it holds v. (out nil
-- with ok: a RESP3 null, the reply of a SET NX that found the key taken.)
-- px: an 'nx' call's lease in ms (its PX or EX), so that it was set at
-- the lease end less px. Each lock's part ends with a break.
local function records(pend, marks, ok, out, b, was, rg, re, rv, r, how, v, px)
  if P3 then redis.setresp(2) end
  for i = 0, pend and #pend or 0 do
    if i > 0 then
      local p = pend[i]
      b, was, rg, re, rv, r, how, v, px = p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]
    end
    if b then
      repeat
        -- keep (keep_lapsed) is read as a number only where it is used.
        local key, ck, rk, owner, keep = X[b], X[b + 1], X[b + 2], X[b + 3], X[na + 1]
        local now
        if how == 'nx' then
          if not ok then
            if v == nil or redis.pcall('GET', key) ~= v then break end
          elseif not (out == 1 or type(out) == 'table' and out.ok) then
            break
          end
          now = v
        elseif how == 'del' and out == 1 then
          now = false
        end
        if now == nil then
          now = redis.pcall('GET', key)
          -- A lock of another type (a hash) is recorded by its owner
          -- field (own), named once, at the first call after which the
          -- hash has it, and kept while the record is.
          if type(now) == 'table' then
            if now.err ~= nil and string.sub(now.err, 1, 9) == 'WRONGTYPE' then
              if rv and rv ~= '' then now = rv else
                fns = fns or helpers()
                now = fns.own(key)
              end
            else
              now = false
            end
          end
        end
        if not was then
          if now then
            -- The token rule (grant.go): the primary's epoch in the high bits
            -- (run '!': in front of a cluster, the node's config epoch).
@GRANT@@IDX@      local gr = grant(ck, redis.call, X[na + 3] == '!', X[na + 3], tonumber(X[na + 2]))
            local e, ms = redis.call('PEXPIRETIME', key)
            if e > 0 then ms = e - (px or redis.call('PTTL', key)) else
              local t = redis.call('TIME')
              e, ms = 0, t[1] * 1000 + math.floor(t[2] / 1000)
            end
            -- A records hash is listed in the locks' index (index.go) while
            -- it exists (a release or a reader takes its member out only once
            -- it is gone), so an index that did not list it (index's reply 1)
            -- means the hash is new: no other record to mark lapsed, no EXISTS
            -- to ask. Where the index cannot be written (a user without the
            -- right, a slot migrating: nil) settle does it all. A hash written
            -- before the index existed, or while it could not be written, is
            -- not listed: a grant then leaves its other records as they were
            -- and gives it the new lease's expiry. None of them holds the lock
            -- (it was absent), and whether a record holds it is read from the
            -- lock's value and counter, never from the lapsed mark.
            redis.call('HSET', rk, owner, string.format('%d %d %d ', gr, ms, e) .. now)
            keep = tonumber(keep)
            if index(X[b + 5], rk, e, keep, ms, gr) ~= 1 then
              fns = fns or helpers()
              fns.settle(rk, ms, keep, owner)
            elseif e > 0 then
              redis.call('PEXPIREAT', rk, e + keep)
            end
          end
          break
        end
        if not rg then break end
        if not now then
          redis.call('HDEL', rk, owner)
          if re == '0' and redis.pcall('PTTL', rk) == -1 then
            local t = redis.call('TIME')
            fns = fns or helpers()
            fns.settle(rk, t[1] * 1000 + math.floor(t[2] / 1000), tonumber(keep), '')
          end
          if redis.pcall('EXISTS', rk) ~= 1 then redis.pcall('ZREM', X[b + 5], rk) end
          break
        end
        local e, ms = redis.call('PEXPIRETIME', key)
        if e < 0 then e = 0 end
        if now ~= rv or e ~= tonumber(re) then
          if e > 0 then ms = e - redis.call('PTTL', key) else
            local t = redis.call('TIME')
            ms = t[1] * 1000 + math.floor(t[2] / 1000)
          end
          fns = fns or helpers()
          local rec = fns.parse(r)
          rec.v, rec.e = now, e
          fns.put(rk, owner, rec)
          fns.settle(rk, ms, tonumber(keep), nil)
        end
      until true
    end
  end
  if marks then
    -- (fnMark, made only for a write that has fence marks to record.)
@MARK@    mark(marks)
  end
end
-- The checks.
return function(n, ...)
  local LB, FA0 = na + 4, na + 4 + 6 * @L@
  local FK0 = FA0 + @FA@
  local cmd = ...
  local lc = type(cmd) == 'string' and string.lower(cmd) or ''
  if lc == 'flushall' or lc == 'flushdb' then
    fns = fns or helpers()
    return fns.flushed(lc, ...)
  end
  -- The keys and whether the call writes them: from KS, or Valkey's.
  -- (The commonest four compared first: no string made to look up.)
  -- kf: the keys the call writes, or k1 alone (no table made).
  local kf, k1, w, p
  if lc == 'get' then w = 'r'
  elseif lc == 'set' or lc == 'pexpire' then w, p = 'w', '1'
  elseif lc == 'del' then w, p = 'w', '*'
  else
    -- The keys of common commands, so that they need no COMMAND
    -- GETKEYSANDFLAGS: r (reads only: nothing to check), n (no key) or w,
    -- then which arguments are keys: 1 the first, * all, 2 every second.
    -- Generated from Valkey's key specs (monitor_ks.go); the commands lock
    -- scripts use most come first: a lookup reads up to its entry.
    local KS = @KS@
    local ks = lc ~= '' and not find(lc, '[ =]') and find(KS, ' ' .. lc .. '=', 1, true)
    if ks then w, p = string.match(KS, '^(.)(.)', ks + #lc + 2) end
    -- GETEX without options only reads, whatever its key is, as the
    -- plain command's judge (Decider.Decide) has it.
    if lc == 'getex' and n == 2 then w = 'r' end
  end
  if w then
    if w ~= 'w' then
      if not P3 then return redis.pcall(...) end
      fns = fns or helpers()
      return fns.fwd3(...)
    end
    if p == '1' or n == 2 then
      k1 = select(2, ...)
    else
      kf = {}
      local s = p == '*' and 1 or 2
      for i = 2, n, s do kf[#kf + 1] = select(i, ...) end
    end
  else
    local r = redis.pcall('COMMAND', 'GETKEYSANDFLAGS', ...)
    if type(r) == 'table' and r.err then
      local e = r.err
      -- Valkey refuses the call itself, with these words or its own.
      if find(e, 'no key arguments', 1, true) or find(e, 'Invalid command specified', 1, true) or find(e, 'Invalid number of arguments', 1, true) or find(e, 'must be strings or integers', 1, true) then
        if not P3 then return redis.pcall(...) end
        fns = fns or helpers()
        return fns.fwd3(...)
      end
      return {err = 'LOCKED lockproxy refused ' .. string.upper(lc) .. ' inside a script: Valkey could not say which of its arguments are keys (' .. e .. '), and one of them may be a lock'}
    end
    kf = {}
    for i = 1, #r do
      -- Flags are status replies (tables); in RESP3 a set, whose
      -- elements are its keys.
      local fl, wr = r[i][2], false
      local s = fl.set
      if s then
        for f in next, s do
          f = type(f) == 'table' and f.ok or f
          if f == 'RW' or f == 'OW' or f == 'RM' then wr = true end
        end
      else
        for x = 1, #fl do
          local f = fl[x]
          f = type(f) == 'table' and f.ok or f
          if f == 'RW' or f == 'OW' or f == 'RM' then wr = true end
        end
      end
      if wr then kf[#kf + 1] = r[i][1] end
    end
  end
  local xdb = lc == 'move' or lc == 'migrate'
  if lc == 'copy' then
    for i = 4, n do
      local a = select(i, ...)
      if type(a) == 'string' and string.lower(string.match(a, '^%Z*')) == 'db' then xdb = true end
    end
  end
  -- The first lock the call may change is noted in b1 ... px1, any other
  -- in pend (no table made for one), for records.
  local pend, marks, b1, was1, rg1, re1, rv1, r1, how1, v1, px1
  for i = 1, kf and #kf or 1 do
    local key = k1
    if kf then key = kf[i] end
    -- A number as a key is the string the server makes of it (Valkey 8:
    -- an integer in long long range as its digits, any other number its
    -- shortest round trip; Redis 7.0: %.17g). Lua's tostring (%.14g) agrees
    -- with both for integers below 1e14 in size but -0 (run calls any other
    -- number hot); the rest are asked of the server (ECHO converts its
    -- argument as every command does).
    if type(key) == 'number' then
      if key % 1 == 0 and key > -1e14 and key < 1e14 and not (key == 0 and 1 / key < 0) then
        key = tostring(key)
      else
        local e = redis.pcall('ECHO', key)
        if type(e) == 'string' then key = e else key = tostring(key) end
      end
    end
    if type(key) == 'string' then
      if @OWN@ then
        fns = fns or helpers()
        return fns.refusal('LOCKED', lc, key, ": it is one of lockproxy's own keys (a grant counter, owner records, fencing marks, the epoch hash or a WAIT's key), which only lockproxy's scripts may change")
      end
      local j
      for x = 1, @L@ do
        if X[LB + 6 * (x - 1)] == key then j = x end
      end
      local lockish = j or @LOCK@
      local guardish = not lockish and (@GUARD@)
      if xdb and (lockish or guardish) then
        fns = fns or helpers()
        return fns.refusal('LOCKED', lc, key, ': it would move a lock or a key a lock guards to another database or server, where lockproxy cannot check it')
      end
      if j then
        local b = LB + 6 * (j - 1)
        local nx, how, v, px = lc == 'setnx', nil, nil, nil
        if lc == 'set' then
          -- As Valkey reads SET's options: an expiry option takes the
          -- next argument, whatever it is (PX NX PX 1 is no NX).
          local get, x = false, 4
          while x <= n do
            local a = select(x, ...)
            if type(a) == 'string' then
              a = string.lower(string.match(a, '^%Z*'))
              if a == 'nx' then nx = true elseif a == 'get' then get = true
              elseif a == 'px' then px = tonumber((select(x + 1, ...))) x = x + 1
              elseif a == 'ex' then px = tonumber((select(x + 1, ...))) px = px and px * 1000 x = x + 1
              elseif a == 'pxat' or a == 'exat' then x = x + 1 end
            end
            x = x + 1
          end
          if nx and not get then how = 'nx' end
        elseif nx then
          how = 'nx'
        elseif (lc == 'del' or lc == 'unlink') and n == 2 then
          how = 'del'
        end
        -- The lock's value before the call (false: absent; '' and
        -- other: it holds another type). A SET NX needs none: it
        -- changes the key only if absent, and its reply says whether.
        local was, other = false, false
        if how ~= 'nx' then
          was = redis.pcall('GET', key)
          if type(was) == 'table' then
            if was.err and string.sub(was.err, 1, 9) == 'WRONGTYPE' then was, other = '', true else was = false end
          end
          was = was or false
        elseif type(select(3, ...)) == 'string' then
          v = select(3, ...)
        end
        -- Under a rule's max_lease (after the mode's '/'), an acquisition
        -- (the lock absent, a call that can create it) gets the lease and
        -- lock-delay checks of SET NX's (fns.delay).
        local mode, dl = X[b + 4], nil
        local sl = find(mode, '/', 1, true)
        if sl then
          dl, mode = string.sub(mode, sl + 1), string.sub(mode, 1, sl - 1)
          if not was and not find(' del unlink expire pexpire expireat pexpireat persist getdel getex hdel lpop rpop spop srem zrem lrem ltrim zpopmin zpopmax zremrangebyscore zremrangebyrank zremrangebylex ', ' ' .. lc .. ' ', 1, true) and (how ~= 'nx' or redis.call('EXISTS', key) == 0) then
            fns = fns or helpers()
            local refused, out = fns.delay(lc, key, tonumber(dl), b, how == 'nx', n, ...)
            if refused then return out end
          elseif was and how ~= 'nx' and find(' set getex setex psetex expire pexpire expireat pexpireat persist ', ' ' .. lc .. ' ', 1, true) then
            fns = fns or helpers()
            local out = fns.renewal(lc, key, tonumber(dl), n, ...)
            if out then return out end
          end
        end
        -- '=' first: the rule's session is user, under which the token
        -- counts for no one but the holder's user, who holds the grant.
        local only = string.byte(mode, 1) == 61
        if only then mode = string.sub(mode, 2) end
        local rg, re, rv, r
        if was then
          r = redis.pcall('HGET', X[b + 2], X[b + 3])
          if type(r) == 'string' then
            rg, re, rv = string.match(r, '^(%d+) %d+ (%d+) (.*)$')
            if not (rg and (other or rv == was) and redis.pcall('GET', X[b + 1]) == rg) then rg = nil end
          end
        end
        if was and not rg and mode ~= 'observe' and not nx and not (type(r) ~= 'string' and string.sub(mode, -1) == '+') then
          -- Does the script's ARGV carry the lock's token: its value
          -- (a string lock), or the owner field its holder's current
          -- record names (a hash lock; no other field)? Under session:
          -- user nothing but the grant counts.
          local shown = false
          if only then
          elseif not other then
            for x = 1, na do
              if X[x] == was then shown = true end
            end
          else
            local g, all = redis.pcall('GET', X[b + 1]), redis.pcall('HGETALL', X[b + 2])
            if type(g) == 'string' and type(all) == 'table' and not all.err then
              for i = 2, #all, 2 do
                local hg, hv = string.match(all[i], '^(%d+) %d+ %d+ (.*)$')
                if hg == g and hv ~= '' then
                  for x = 1, na do
                    if X[x] == hv then shown = true end
                  end
                end
              end
            end
          end
          if not shown then
            fns = fns or helpers()
            if only then
              return fns.refusal('NOTOWNER', lc, key, ": this client's user holds no grant of the lock (session: user: only the holder's user may change it, whatever the script is given); log in as the user that holds it")
            end
            return fns.refusal('NOTOWNER', lc, key, ": this client holds no grant of the lock, and the script was not given the lock's token (its value, or the owner field of a Redisson-style lock's holder) in ARGV; pass the token in ARGV, as the lock libraries' release scripts do")
          end
        end
        if not b1 then
          b1, was1, rg1, re1, rv1, r1, how1, v1, px1 = b, was, rg, re, rv, r, how, v, px
        elseif b1 ~= b then
          pend = pend or {}
          local seen = false
          for x = 1, #pend do
            if pend[x][1] == b then seen = true end
          end
          if not seen then pend[#pend + 1] = {b, was, rg, re, rv, r, how, v, px} end
        end
      elseif lockish then
        fns = fns or helpers()
        return fns.refusal('LOCKED', lc, key, ": it is a lock's key and none of the script's KEYS and ARGV; pass the lock's key in KEYS, so that lockproxy can check who holds it")
      elseif guardish then
        -- The fence check the proxy prepared for it, if any.
        local e, m, found = nil, nil, false
        local ki, ai = FK0, FA0 + 2
        for x = 1, @FA@ > 0 and tonumber(X[FA0 + 1]) or 0 do
          local c = tonumber(X[ai])
          if not found and X[ai + 3] == key then
            -- (fnFence, made only for a write to a guarded key, not with
            -- the other helpers.)
@FENCE@            local _
            e, _, m = fence(X, X, ki, ai, X[FA0], 1)
            found = true
          end
          ki, ai = ki + 3 * c, ai + 4
        end
        if not found then
          fns = fns or helpers()
          return fns.refusal('UNFENCED', lc, key, ": a lock's fence guards it and it is none of the script's KEYS and ARGV; pass it in KEYS, so that lockproxy can check the writer's fencing token")
        end
        if e then
          if string.sub(e.err, 1, 9) == 'UNFENCED ' then
            fns = fns or helpers()
            e = fns.refusal('UNFENCED', lc, key, 'this client holds no grant of a lock that guards it (unfenced_writes: reject); acquire the lock first')
          end
          return e
        end
        if m and #m > 0 then
          marks = marks or {}
          for x = 1, #m do marks[#marks + 1] = m[x] end
        end
      end
    end
  end
  if not (b1 or marks) then
    if not P3 then return redis.pcall(...) end
    fns = fns or helpers()
    return fns.fwd3(...)
  end
  -- A finalizer (__gc) of any script's may run at any allocation and
  -- raise an error: one between the call and its records would leave a
  -- lock taken without its grant, or a write without its fence mark. The
  -- records are read from what the keys hold now, so they are written
  -- again, with the collector stopped if need be, whatever interrupted.
  local f = redis.pcall
  if P3 then
    fns = fns or helpers()
    f = fns.fwd3
  end
  local ok, r = pcall(f, ...)
  if not ok or not (type(r) == 'table' and r.err) then
    local out = nil
    if ok then out = r end
    if not pcall(records, pend, marks, ok, out, b1, was1, rg1, re1, rv1, r1, how1, v1, px1) then
      collectgarbage('stop')
      records(pend, marks, ok, out, b1, was1, rg1, re1, rv1, r1, how1, v1, px1)
      collectgarbage('restart')
    end
  end
  if not ok then error(r, 0) end
  return r
end
end
-- run: the body's redis.pcall, and what its redis.call runs. A call goes
-- straight to Valkey unless an argument is hot: a string (or number) that
-- may name a lock, a key a lock guards, or one of lockproxy's own keys.
@GATEVARS@
local function run(...)
  local n = select('#', ...)
  -- A GET only reads: it goes straight to Valkey, hot or not.
  local verb = ...
  if verb == 'get' or verb == 'GET' then return redis.pcall(...) end
  -- A command that reconfigures Valkey is refused, hot or not, when the
  -- deployment gates it (gate.go: empty otherwise).
@GATE@
  local hot = false
@FLUSH@
  if n > 17 then
    local t = {...}
    for i = 2, n do
      local a = t[i]
      if type(a) == 'number' then
        if a % 1 ~= 0 or a <= -1e14 or a >= 1e14 or a == 0 and 1 / a < 0 then hot = true break end
        a = tostring(a)
      end
      if type(a) == 'string' and (@HOT@) then hot = true break end
    end
  else
    for i = 2, n do
      local a = select(i, ...)
      if type(a) == 'number' then
        if a % 1 ~= 0 or a <= -1e14 or a >= 1e14 or a == 0 and 1 / a < 0 then hot = true break end
        a = tostring(a)
      end
      if type(a) == 'string' and (@HOT@) then hot = true break end
    end
  end
  if not hot then return redis.pcall(...) end
  slow = slow or mk()
  if not P3 then return slow(n, ...) end
  -- The body chose RESP3: the checks and records read Valkey's replies
  -- in RESP2, what they are written for (a RESP3 null is nil, not false;
  -- HGETALL a map; CLUSTER INFO a verbatim string), and fwd3 runs the
  -- client's call in RESP3.
  redis.setresp(2)
  local ok, r = pcall(slow, n, ...)
  redis.setresp(3)
  if not ok then error(r, 0) end
  return r
end
-- The body's redis.call is a table whose call is a coroutine's C
-- function: an error it raises is raised from a C function the body
-- called, so Valkey names the body's line in user_script:LINE.
local function co(_, ...)
  local ok, r = pcall(run, ...)
  while true do
    if not ok or type(r) == 'table' and r.err then
      CM.__call = coroutine.wrap(co)
      error(r)
    end
    ok, r = pcall(run, select(2, coroutine.yield(r)))
  end
end
-- @@seal: the script's own redis and seal.
-- redis (and server, and redis.call itself) is one table: its call is
-- the coroutine's, its pcall is run, the rest is Valkey's. It holds no
-- field of its own: call and pcall are read through CM's __index (a
-- function, as a library's: no table of them to make at each run; SRF
-- keeps setresp's stand-in once made), and every write goes to Valkey's
-- redis, which refuses it with Valkey's words from the body's line
-- (Attempt to modify a readonly table).
local R, SRF = {}, nil
CM = {__call = coroutine.wrap(co), __index = function(_, k)
    if k == 'call' then return R elseif k == 'pcall' then return run end
    if k ~= 'setresp' then return redis[k] end
    if SRF then return SRF end
-- @@sr: sealedSR, made here at the body's first read of redis.setresp,
-- not at every run; a library's monitor makes it with the checks.
-- sealedSR makes the body's redis.setresp: Valkey's, and it notes the
-- body's choice (P3). It is a coroutine's C function, so that an error
-- names the body's line; Valkey's words, a string, are raised as an
-- error table, which the coroutine passes on unprefixed. An error ends
-- the coroutine: keep is given the next one.
local function sealedSR(keep)
  local function set(...)
    redis.setresp(...)
    P3 = tonumber((...)) == 3
  end
  local function loop(...)
    local ok, r = pcall(set, ...)
    while true do
      if not ok then
        keep(coroutine.wrap(loop))
        if type(r) == 'string' then r = {err = r} end
        error(r, 0)
      end
      ok, r = pcall(set, coroutine.yield())
    end
  end
  local f = coroutine.wrap(loop)
  keep(f)
  return f
end
-- @@sr end
    return sealedSR(function(f) SRF = f end)
  end, __newindex = redis, __metatable = false}
setmetatable(R, CM)
local A = nil
if na > 4000 then
  A = {}
  for i = 1, na do A[i] = X[i] end
else
  A = {unpack(X, 1, na)}
end
-- The body's names that could reach an unchecked call are the chunk's
-- locals this function returns (MonitorBody), a lexical seal that needs no setfenv (Redis
-- 7.0.15-1~deb12u10 and Valkey with lua-enable-insecure-api no have none):
-- redis and server are R, ARGV the client's arguments. When the body's
-- text names none of _G, getfenv, setfenv, load (loadstring) and
-- newproxy, it cannot reach Valkey's globals table, so the rest are nil.
-- missing stands for a global this Valkey does not have (server before
-- Valkey 8, getfenv, setfenv and newproxy where lua-enable-insecure-api
-- is off): calling or indexing it raises Valkey's words, from a C
-- function (a coroutine's), so that Valkey names the body's line.
local S, missing = R, nil
if not rawget(G, 'server') or @SEAL@ then
missing = function(name)
  local mt = {__metatable = false}
  local function raise()
    mt.__call, mt.__index = coroutine.wrap(raise), coroutine.wrap(raise)
    error("Script attempted to access nonexistent global variable '" .. name .. "'", 0)
  end
  mt.__call, mt.__index = coroutine.wrap(raise), coroutine.wrap(raise)
  return setmetatable({}, mt)
end
  if not rawget(G, 'server') then S = missing('server') end
end
-- setmetatable of redis or _G raises Valkey's error for a readonly
-- table, from a C function (a coroutine's), so that Valkey names the
-- body's line; only a body whose text names setmetatable gets the
-- stand-in (sealed: SM), the others Valkey's own.
local SM = setmetatable
if @SM@ then
-- @@sm: sealedSM, made only for a body that names setmetatable; a
-- library's monitor makes it with the checks.
-- sealedSM is a stand-in for setmetatable whose call is a coroutine's
-- C function: for a table ro says is readonly (the script's redis or
-- _G) it raises Valkey's error; otherwise it is Valkey's setmetatable,
-- whose errors keep Valkey's words (the position of set is taken off;
-- the coroutine's caller, the body, is named instead).
local function sealedSM(ro)
  local mt = {__metatable = false}
  local function set(t, m) return setmetatable(t, m) end
  local function loop(_, t, m)
    while true do
      local ok, r
      if ro(t) then
        ok, r = false, {err = 'ERR Attempt to modify a readonly table'}
      else
        ok, r = pcall(set, t, m)
      end
      if not ok then
        mt.__call = coroutine.wrap(loop)
        if type(r) == 'string' then r = string.gsub(r, '^[^:]*:%d+: ', '', 1) end
        error(r, 0)
      end
      _, t, m = coroutine.yield(r)
    end
  end
  mt.__call = coroutine.wrap(loop)
  return setmetatable({}, mt)
end
-- @@sm end
  SM = sealedSM(function(t) return rawequal(t, R) or env ~= nil and rawequal(t, env) end)
end
if not @SEAL@ then return R, S, nil, nil, nil, nil, nil, nil, A, SM end
-- GE: the environment of the body's functions (a library's differs).
local GE, gf, sf, np, ls, ld = G, nil, nil, nil, nil, nil
env = setmetatable({KEYS = KEYS, ARGV = A, redis = R, server = rawget(G, 'server') and R or nil, setmetatable = SM},
  {__index = G, __newindex = G, __metatable = getmetatable(G)})
rawset(env, '_G', env)
-- @@stand-ins: from here to @@end, the sealed stand-ins, shared with a
-- library's monitor (monitor_lib.lua), which makes them while the library
-- loads, where Valkey gives it no global but redis (G is nil then): a
-- stand-in called before G is set reads Valkey's own name, so that Valkey
-- raises its own error (nonexistent global). Upvalues: G (Valkey's
-- globals), GE, env (the sealed table), R, S, A, SM (what a chunk from
-- loadstring gets) and type.
-- getfenv answers the sealed table for Valkey's globals.
gf = function(f)
  local g = G and rawget(G, 'getfenv')
  if not g then return getfenv(f) end
  if f == nil then f = 1 end
  if type(f) == 'number' and f > 0 then f = f + 1 end
  local e = g(f)
  if rawequal(e, G) or rawequal(e, GE) then return env end
  return e
end
-- setfenv of a function whose environment is Valkey's globals (the
-- monitor's, Valkey's, and so the body's own) is refused: the monitor's
-- functions look their helpers up there.
sf = function(f, t)
  local s = G and rawget(G, 'setfenv')
  if not s then return setfenv(f, t) end
  if type(f) == 'number' then
    -- Level 0 is the Lua state's own environment, shared by every
    -- later script: Valkey 8.0.1 cannot run another script after
    -- setfenv(0, {}).
    if f == 0 then error('setfenv(0) is refused: it would change the environment of every later script', 2) end
    if f > 0 then f = f + 1 end
  end
  local fe = rawget(G, 'getfenv')(f)
  if rawequal(fe, G) or rawequal(fe, GE) then error("setfenv is refused for a function whose environment is Valkey's globals (the script's own, Valkey's and lockproxy's)", 2) end
  return s(f, t)
end
-- A finalizer (__gc) runs at whatever allocation of whichever later
-- script comes first, and one that raises an error there makes Valkey
-- 8.0.1 exit (a Lua panic): newproxy, the only way to one, is refused.
np = function()
  if not (G and rawget(G, 'newproxy')) then return newproxy() end
  error('newproxy is refused: a finalizer would run inside other clients\' scripts', 2)
end
-- A chunk from loadstring gets the same parameters: it is compiled alone
-- first (Valkey's own words for an error), so all of it then lies inside
-- the function it is wrapped in, on the same lines.
local P = 'return function(redis, server, _G, getfenv, setfenv, loadstring, load, newproxy, ARGV, setmetatable, ...) '
ls = function(s, name)
  if not G then return loadstring(s, name) end
  local f, e = loadstring(s, name)
  if not f then return f, e end
  f, e = loadstring(P .. s .. '\nend', name or s)
  if not f then return f, e end
  f = f()
  return function(...) return f(R, S, env, gf, sf, ls, ld, np, A, SM, ...) end
end
-- load reads its chunk with Valkey's load (its checks and errors), keeps
-- the pieces, and compiles them as loadstring does.
ld = function(fn, name)
  if not G then return load(fn, name) end
  local parts = {}
  local f, e = load(function()
    local p = fn()
    if type(p) == 'string' then parts[#parts + 1] = p end
    return p
  end, name)
  if not f then return f, e end
  return ls(table.concat(parts), name or '=(load)')
end
-- @@end
if rawget(G, 'getfenv') then
  rawset(env, 'getfenv', gf)
  rawset(env, 'setfenv', sf)
else
  gf, sf = missing('getfenv'), missing('setfenv')
end
if rawget(G, 'newproxy') then rawset(env, 'newproxy', np) else np = missing('newproxy') end
rawset(env, 'loadstring', ls)
rawset(env, 'load', ld)
return R, S, env, gf, sf, ls, ld, np, A, SM
