package rewrite

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync/atomic"
)

// Script is a Lua script lockproxy sends, with its SHA1 for EVALSHA.
type Script struct {
	Name string
	Body string
	SHA  string
	// Client is, for the wrapper of a client's script (wrap.go), that
	// script's SHA1.
	Client string
	// Fn is, for an FCALL through lockproxy, the function's name: the
	// call is FCALL of Body (its monitored registration, monitor_lib.go).
	Fn   string
	Verb string // the client's spelling of FCALL
	// RO: the client's own script, always sent as EVAL_RO of Body (an
	// EVALSHA_RO of a script Valkey may hold only monitored).
	RO   bool
	sent atomic.Bool
}

// FirstUse reports, once, that a wrapper is sent for the first time: the
// proxy then sends it as EVAL, which loads it into Valkey's script cache,
// rather than an EVALSHA sure to fail. lockproxy's own scripts are loaded
// on every upstream connection: never their first use.
func (sc *Script) FirstUse() bool {
	return sc.Client != "" && !sc.sent.Load() && sc.sent.CompareAndSwap(false, true)
}

// newScript makes a script of a body whose comment lines ("--" first on
// the line) are dropped: Valkey hashes the whole text of every EVAL, so
// they would cost at every call sent as EVAL.
func newScript(name, body string) *Script {
	body = dropComments(body)
	sum := sha1.Sum([]byte(body))
	return &Script{Name: name, Body: body, SHA: hex.EncodeToString(sum[:])}
}

func dropComments(body string) string {
	var b strings.Builder
	b.Grow(len(body))
	for _, l := range strings.SplitAfter(body, "\n") {
		if !strings.HasPrefix(strings.TrimLeft(l, " \t"), "--") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// The lock state lives in Valkey, beside each lock, in its hash slot:
//
//	counter   the grant counter (CounterKey, or the rule's fence counter):
//	          raised by every acquisition (fnGrant: INCR, and the epoch's
//	          floor), never expires; the latest grant number is the lock's
//	          current fencing token.
//	records   a hash (RecordsKey) with one field per owner that was granted
//	          the lock: "<grant> <acquired ms> <lease end ms> <value>", lease
//	          end 0 for a lock without expiry.
//
// An owner holds the lock while the key holds its record's value and the
// counter its record's grant. A record outlives its lease by keep_lapsed,
// so a holder that stalled past its lease is told 0 (not yours any more)
// rather than refused as a stranger; the records hash expires when its last
// record does, and has no expiry only while a lock without a lease is
// recorded in it. Every decision that depends on who holds a lock is taken
// here, by Valkey, in command order: the proxy keeps no lock state of its own.
//
// Times are Valkey's own clock (TIME), so every lockproxy instance in front
// of one Valkey agrees on them.

// absent: while a slot is being migrated away from its node, Valkey
// refuses a script any access to a key of that slot that is absent there
// ("Script attempted to access a non local key", issue 17). Before a
// script on such a slot runs, Valkey checks that every key it declares is
// there (else it redirects), and a slot cannot change hands while a script
// runs; so inside a script only a key the script itself deleted (or
// emptied) can be refused. The scripts
// never read such a key with redis.call: what they need is decided from a
// reply already read, or read with redis.pcall, a refusal meaning absent
// (a PTTL's error table is not -1, nor a number).

// The functions the lock scripts share, one constant each: Valkey runs each
// script on its own, so each body carries the ones it calls (and only
// those: defining a function costs a closure at every run).
const (
	fnNow = `local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`
	fnParse = `local function parse(v)
  if not v then return nil end
  local g, a, e, val = string.match(v, '^(%d+) (%d+) (%d+) (.*)$')
  if not g then return nil end
  return {g = g, a = tonumber(a), e = tonumber(e), v = val}
end
`
	fnPut = `local function put(rk, owner, r)
  redis.call('HSET', rk, owner, r.g .. ' ' .. string.format('%d', r.a) .. ' ' .. string.format('%d', r.e) .. ' ' .. r.v)
end
`
	fnCurrent = `local function current(key, ck, r)
  return r ~= nil and redis.call('GET', key) == r.v and redis.call('GET', ck) == r.g
end
`
	// holder also returns the records it read, for a settle to come.
	fnHolder = `local function holder(key, ck, rk, notowner)
  local all = redis.call('HGETALL', rk)
  local v, g = redis.call('GET', key), redis.call('GET', ck)
  for i = 1, #all, 2 do
    local r = parse(all[i + 1])
    if all[i] ~= notowner and r and r.v == v and r.g == g then return all[i], all end
  end
  return '', all
end
`
	// settle keeps a records hash true after a change: records lapsed
	// keep ms ago go, every record but taker's is marked lapsed now when
	// taker just took the lock, and the hash expires keep after its latest
	// lease end (never, while it records a lock without a lease).
	//
	// all, when given, is the hash as read before the field dropped was
	// deleted from it (one read fewer). settle writes the hash only while
	// a field it read is still there: it never touches an absent key
	// (see absent).
	fnSettle = `local function settle(rk, now, keep, taker, all, dropped)
  all = all or redis.call('HGETALL', rk)
  local last, forever = 0, false
  for i = 1, #all, 2 do
    if all[i] ~= dropped then
      local r = parse(all[i + 1])
      if r and taker and all[i] ~= taker and (r.e == 0 or r.e > now) then
        r.e = now
        put(rk, all[i], r)
      end
      if not r or (r.e > 0 and r.e + keep <= now) then
        redis.call('HDEL', rk, all[i])
      elseif r.e == 0 then
        forever = true
      elseif r.e > last then
        last = r.e
      end
    end
  end
  if forever then
    redis.call('PERSIST', rk)
  elseif last > 0 then
    redis.call('PEXPIREAT', rk, last + keep)
  end
end
`
	// fence checks a writer's fencing tokens, one check per guarded key
	// (see Fenced for K's and A's layout from ki and ai): it returns the
	// refusal, or nil with the tokens (for the audit), the marks to record
	// once the write is done, and where A's checks end. It holds no
	// comment, so that the wrapper of a client's script (wrap.go) can
	// carry it on one line.
	fnFence = `local function fence(K, A, ki, ai, owner, n)
  local marks, tokens = {}, {}
  for i = 1, n do
    local cands, mode, unfenced, name = tonumber(A[ai]), A[ai + 1], A[ai + 2], A[ai + 3]
    ai = ai + 4
    local token, tok, at = nil, nil, nil
    for c = 1, cands do
      local r = redis.call('HGET', K[ki + 1], owner)
      if r then r = string.match(r, '^(%d+) %d+ %d+ ') end
      if r and (not token or tonumber(r) > token) then token, tok, at = tonumber(r), r, ki end
      ki = ki + 3
    end
    if not token then
      if unfenced == 'reject' then return redis.error_reply('UNFENCED ' .. i) end
      tokens[i] = '-'
    elseif mode == 'current' then
      local latest = redis.call('GET', K[at]) or '0'
      if token ~= tonumber(latest) then
        return redis.error_reply('STALE lockproxy refused a write to ' .. name .. ' with fencing token ' .. tok .. ': the lock was granted again since, to token ' .. latest .. '; acquire the lock again before writing')
      end
      tokens[i] = tok
    else
      local field, what = name, 'it has'
      if mode == 'highest-lock' then field, what = K[at + 1], 'the keys its lock guards have' end
      local high = redis.call('HGET', K[at + 2], field) or '0'
      local hn = tonumber(high)
      if token < hn then
        return redis.error_reply('STALE lockproxy refused a write to ' .. name .. ' with fencing token ' .. tok .. ': ' .. what .. ' already accepted token ' .. high .. '; acquire the lock again before writing')
      end
      if token > hn then marks[#marks + 1] = {K[at + 2], field, tok} end
      tokens[i] = tok
    end
  end
  return nil, tokens, marks, ai
end
`
	// fnRun runs the command A[from], A[from + 1], ... Lua cannot unpack
	// more than about 8000 values into a call, so a longer command is run
	// in parts, where its reply composes: DEL, UNLINK, EXISTS and TOUCH of
	// many keys (the counts added), MSET (its OK), and SADD, SREM, HDEL,
	// HSET (counts added), RPUSH and LPUSH (the last length) of many
	// values. The parts run in one script, so they are one step still.
	fnRun = `local function run(A, from)
  local last = #A
  if last - from < 4000 then return redis.pcall(unpack(A, from, last)) end
  local cmd = string.upper(A[from])
  local keyed, sum
  if cmd == 'DEL' or cmd == 'UNLINK' or cmd == 'EXISTS' or cmd == 'TOUCH' then keyed, sum = false, true
  elseif cmd == 'MSET' then keyed, sum = false, false
  elseif cmd == 'SADD' or cmd == 'SREM' or cmd == 'HDEL' or cmd == 'HSET' then keyed, sum = true, true
  elseif cmd == 'RPUSH' or cmd == 'LPUSH' then keyed, sum = true, false
  else
    return redis.error_reply('ERR lockproxy cannot run ' .. cmd .. ' with ' .. (last - from) .. ' arguments inside its fence check (Lua passes at most about 8000 values to a call); send it in parts')
  end
  local i, total, reply = from + 1, 0, nil
  if keyed then i = from + 2 end
  while i <= last do
    local j = math.min(i + 3999, last)
    if keyed then reply = redis.pcall(A[from], A[from + 1], unpack(A, i, j)) else reply = redis.pcall(A[from], unpack(A, i, j)) end
    if type(reply) == 'table' and reply.err then return reply end
    if sum then total = total + reply end
    i = j + 1
  end
  if sum then return total end
  return reply
end
`
	// fnMark records the marks fence returned, once the write is done:
	// only tokens above the mark fence read, so a write at the mark costs
	// no call. Nothing between the read and the write can move a mark
	// (clients may not write lockproxy's keys), and two checks that name
	// one mark hold one token, so their writes agree.
	fnMark = `local function mark(marks)
  for _, m in ipairs(marks) do redis.call('HSET', m[1], m[2], m[3]) end
end
`
)

// Acquire runs the client's SET ... NX (any expiry form, GET, KEEPTTL) or
// SETNX and, only when it took the lock, mints the next grant number and
// writes the taker's record, in the same step. Every other record of the
// lock is marked lapsed now: the lock is no longer theirs.
//
// KEYS[1] lock, KEYS[2] counter, KEYS[3] records. ARGV[1] owner, ARGV[2]
// keep_lapsed in ms, ARGV[3] "get" when SET has GET (then a nil reply means
// it took the lock), followed by ":<ms>" under a rule's max_lease (see
// acquireDelay) and "!" in front of a cluster (see fnGrant), ARGV[4] and
// ARGV[5] the epoch clues fnGrant establishes the epoch with (known, run:
// EpochClue), ARGV[6] the locks' index (index.go), then SET's arguments
// after the key (for SETNX: value, NX).
//
// Reply: {grant or 0, SET's own reply}. Errors are Valkey's own, word for
// word (pcall, not call, which would add the script's name). If the counter
// cannot be incremented (it holds something else), the lock just taken is
// given back, so no grant goes unrecorded.
var Acquire = newScript("acquire", fnGrant+fnSlotChanged+`local get, delay, cl = string.match(ARGV[3], '^(%a*):?(%d*)(!?)$')
local known, run = tonumber(ARGV[4]), ARGV[5]
if delay ~= '' then
`+acquireDelay+`end
local r = redis.pcall('SET', KEYS[1], unpack(ARGV, 7))
if type(r) == 'table' and r.err then return r end
-- Taken: SET answered (OK), or, with GET, answered nil (no old value).
if (r ~= false) == (get == 'get') then return {0, r} end
local grant = grant(KEYS[2], redis.pcall, cl == '!', run, known)
if type(grant) == 'table' then
  redis.call('DEL', KEYS[1])
  return grant
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
-- The lease as SET was given it (PTTL, a millisecond later, could say
-- 29999 of 30000); KEEPTTL or none: the key was absent, so no expiry.
-- Valkey accepts one expiry option at most, and its argument is a number,
-- never an option's name: the last name found from the end is the one.
local e = 0
for i = #ARGV - 1, 8, -1 do
  local o = string.upper(ARGV[i])
  if o == 'PX' then e = now + ARGV[i + 1] break
  elseif o == 'EX' then e = now + 1000 * ARGV[i + 1] break
  elseif o == 'PXAT' then e = tonumber(ARGV[i + 1]) break
  elseif o == 'EXAT' then e = 1000 * ARGV[i + 1] break end
end
local rec = string.format('%d %d %d ', grant, now, e) .. ARGV[7]
`+fnIndex+`if redis.call('EXISTS', KEYS[3]) == 0 then
  -- The usual case: no other record to mark lapsed or prune.
  redis.call('HSET', KEYS[3], ARGV[1], rec)
  if e > 0 then redis.call('PEXPIREAT', KEYS[3], e + ARGV[2]) end
  index(ARGV[6], KEYS[3], e, tonumber(ARGV[2]), now, grant)
  return {grant, r}
end
`+fnParse+fnPut+fnSettle+`redis.call('HSET', KEYS[3], ARGV[1], rec)
settle(KEYS[3], now, tonumber(ARGV[2]), ARGV[1])
index(ARGV[6], KEYS[3], e, tonumber(ARGV[2]), now, grant)
return {grant, r}`)

// acquireDelay is Acquire's check under a rule's max_lease (the ms after
// ARGV[3]'s ':'), before the SET: a lease longer than max_lease, or none,
// is refused (LEASE); within max_lease of the last change of primary (the
// epoch hash's "changed", Valkey's own clock, the epoch established first
// when the primary changed since: fnGrant's epoch; in front of a cluster
// the slot's mark, fnSlotChanged) the lock is not granted, and
// the client is answered as if someone held it ({0, nil}; SET NX GET,
// whose "not taken" names a holder's value, gets LOCKDELAY).
const acquireDelay = `local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local e = 0
for i = #ARGV - 1, 8, -1 do
  local o = string.upper(ARGV[i])
  if o == 'PX' then e = now + ARGV[i + 1] break
  elseif o == 'EX' then e = now + 1000 * ARGV[i + 1] break
  elseif o == 'PXAT' then e = tonumber(ARGV[i + 1]) break
  elseif o == 'EXAT' then e = 1000 * ARGV[i + 1] break end
end
if e == 0 or e - now > tonumber(delay) then
  return redis.error_reply('LEASE lockproxy refused to grant ' .. KEYS[1] .. ' without a lease of at most ' .. delay .. ' ms (the rule\'s max_lease): ask for a shorter lease (PX ' .. delay .. ' or less) and renew it')
end
local ch
if cl ~= '!' then ch = select(2, epoch(run, known, true)) else ch = slotChanged(ARGV[6], known) end
if ch and now < ch + tonumber(delay) then
  if get == 'get' then
    return redis.error_reply('LOCKDELAY lockproxy does not grant ' .. KEYS[1] .. ' for ' .. (ch + tonumber(delay) - now) .. ' ms more: the primary changed, and a grant it lost may still be held (lock delay, the rule\'s max_lease); retry then')
  end
  return {0, false}
end
`

// Release is DEL/UNLINK made safe. Every lock key is judged first, and a
// refusal refuses the whole command, so nothing is deleted half-way; then
// plain keys are deleted as asked, and each lock key by its rule:
//
//	rewrite  the caller's record says it holds the lock: deleted (1); its
//	         grant was superseded: not deleted (0); no record: refused
//	         (NOTOWNER), or deleted as asked under unknown_owner: forward
//	reject   the caller holds it: refused (TOKENRELEASE); no record: as above
//	observe  deleted as asked
//
// The caller's record goes with its release, and the records' entry in
// the locks' index with the last record (fnUnindex).
//
// KEYS: plain keys, then (lock, counter, records) per lock. ARGV[1] DEL or
// UNLINK, ARGV[2] the number of plain keys, ARGV[3] keep_lapsed in ms; then
// per lock its owner, its mode (rewrite, reject or observe, with "+" when
// unknown owners are forwarded) and the locks' index (index.go).
//
// Reply: {deleted, then per lock: outcome, holder, held ms, lapsed, grant,
// the token's first 3 bytes and its length (for the audit's masked token)} with
// outcome released (deleted, the caller's), superseded (not deleted: another
// grant since), forwarded (deleted or not as asked, no record); holder is
// the owner whose grant the key holds now when that is not the caller ("" if
// none, for a forwarded delete the owner whose lock it removed); held ms the
// time since the caller's grant (-1 without a record); lapsed 1 when the
// caller's lease had run out; grant the caller's (0 without a record). A refusal is the error "NOTOWNER <i>" or
// "TOKENRELEASE <i>" (i: which lock), which the proxy words.
var Release = newScript("release", releaseOne+fnParse+fnCurrent+fnUnindex+`local function rare() `+fnPut+fnHolder+fnSettle+`return holder, settle end
local n = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local plan = {}
for i = 1, (#KEYS - n) / 3 do
  local k = n + 3 * i - 2
  local owner, mode = ARGV[1 + 3 * i], ARGV[2 + 3 * i]
  local rec = nil
  if mode ~= 'observe' then rec = parse(redis.call('HGET', KEYS[k + 2], owner)) end
  local fwd = string.sub(mode, -1) == '+'
  if mode == 'observe' or (not rec and fwd) then
    plan[i] = 'forwarded'
  elseif not rec then
    return redis.error_reply('NOTOWNER ' .. i)
  elseif string.sub(mode, 1, 6) == 'reject' then
    return redis.error_reply('TOKENRELEASE ' .. i)
  elseif current(KEYS[k], KEYS[k + 1], rec) then
    plan[i] = 'released'
  else
    plan[i] = 'superseded'
  end
  plan[i] = {plan[i], rec}
end
local deleted = 0
for i = 1, n, 4000 do
  -- In parts: Lua cannot unpack more than about 8000 values into a call.
  deleted = deleted + redis.call(ARGV[1], unpack(KEYS, i, math.min(i + 3999, n)))
end
local out, seen = {0}, nil
-- Only a release of several locks can name one twice.
if #plan > 1 then seen = {} end
for i = 1, #plan do
  local k = n + 3 * i - 2
  local what, rec, owner = plan[i][1], plan[i][2], ARGV[1 + 3 * i]
  local who = ''
  if seen and seen[KEYS[k]] then
    -- The same lock named again: the first time did all there was to do,
    -- and its keys may be gone now (see absent). Its holder is unchanged
    -- unless that deleted it.
    if what == 'superseded' then who = seen[KEYS[k]] end
  else
    local holder, settle, all = nil, nil, nil
    if what ~= 'released' then
      holder, settle = rare()
      who, all = holder(KEYS[k], KEYS[k + 1], KEYS[k + 2], owner)
    end
    if seen then seen[KEYS[k]] = who end
    if what ~= 'superseded' then deleted = deleted + redis.call(ARGV[1], KEYS[k]) end
    if rec then redis.call('HDEL', KEYS[k + 2], owner) end
    -- The records have no expiry while they record a lock without a lease;
    -- one released with a lease was the latest grant, and its taking marked
    -- every other record lapsed, so then none is without one. The HDEL may
    -- have emptied them: see absent.
    if (what ~= 'released' or rec.e == 0) and redis.pcall('PTTL', KEYS[k + 2]) == -1 then
      -- If that lock is gone now, so is every claim to it, and the hash
      -- must expire. Only a superseded lock was not deleted here.
      local gone = nil
      if what ~= 'superseded' or redis.call('EXISTS', KEYS[k]) == 0 then gone = '' end
      if not settle then holder, settle = rare() end
      settle(KEYS[k + 2], now, tonumber(ARGV[3]), gone, all, rec and owner)
    end
    if rec then unindex(ARGV[3 + 3 * i], KEYS[k + 2]) end
  end
  local held, lapsed, grant, head, size = -1, 0, 0, '', 0
  if rec then
    held, grant, head, size = now - rec.a, tonumber(rec.g), string.sub(rec.v, 1, 3), #rec.v
    if rec.e > 0 and rec.e <= now then lapsed = 1 end
  end
  out[#out + 1] = what
  out[#out + 1] = who
  out[#out + 1] = held
  out[#out + 1] = lapsed
  out[#out + 1] = grant
  out[#out + 1] = head
  out[#out + 1] = size
end
out[1] = deleted
return out`)

// releaseOne is Release's usual case, first and on its own: one lock key,
// no plain keys, rewrite mode, and the caller holds the lock under a lease.
// It answers exactly as the general path below would (which it falls
// through to otherwise), without its tables and helpers: a fifth of the
// instructions Valkey spends on the call.
const releaseOne = `if ARGV[2] == '0' and #KEYS == 3 and ARGV[5] == 'rewrite' then
  local r = redis.call('HGET', KEYS[3], ARGV[4])
  if not r then return redis.error_reply('NOTOWNER 1') end
  local g, a, e, v = string.match(r, '^(%d+) (%d+) (%d+) (.*)$')
  if g and e ~= '0' and redis.call('GET', KEYS[1]) == v and redis.call('GET', KEYS[2]) == g then
    local t = redis.call('TIME')
    local now = t[1] * 1000 + math.floor(t[2] / 1000)
    local deleted = redis.call(ARGV[1], KEYS[1])
    redis.call('HDEL', KEYS[3], ARGV[4])
    if redis.pcall('EXISTS', KEYS[3]) ~= 1 then redis.pcall('ZREM', ARGV[6], KEYS[3]) end
    local lapsed = 0
    if e + 0 <= now then lapsed = 1 end
    return {deleted, 'released', '', now - a, lapsed, tonumber(g), string.sub(v, 1, 3), #v}
  end
end
`

// Holder runs one command on a lock key for the lock's holder only: a lease
// change (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, PERSIST, GETEX with options)
// or the holder's own SET (XX, GET, KEEPTTL ...), and moves the holder's
// record with it (new value, new lease end) in the same step; a command
// that ends the key (PEXPIRE 0) ends the record. From an owner whose grant
// was superseded it answers what the command answers when there is nothing
// to act on (0, or nil); from an owner with no record it is refused.
//
// KEYS[1] lock, KEYS[2] counter, KEYS[3] records. ARGV[1] owner, ARGV[2]
// keep_lapsed in ms, ARGV[3] "0" or "nil" (the no-op reply), ARGV[4] the
// refusal's code (NOTOWNER, LOCKED), ARGV[5] the locks' index (index.go),
// ARGV[6] the command, then its arguments after the key.
//
// Reply: {1 when it ran (0 when superseded), the command's reply}; the
// refusal is the error "<code> 1", which the proxy words.
var Holder = newScript("holder", fnNow+fnParse+fnPut+fnCurrent+fnSettle+fnUnindex+`local rec = parse(redis.call('HGET', KEYS[3], ARGV[1]))
if not rec then return redis.error_reply(ARGV[4] .. ' 1') end
if not current(KEYS[1], KEYS[2], rec) then
  if ARGV[3] == '0' then return {0, 0} end
  return {0, false}
end
local reply = redis.pcall(ARGV[6], KEYS[1], unpack(ARGV, 7))
if type(reply) == 'table' and reply.err then return reply end
local now = now_ms()
-- One read tells whether the command ended the key (see absent) and, if
-- not, its lease.
local pttl = redis.pcall('PTTL', KEYS[1])
if type(pttl) == 'table' or pttl == -2 then
  redis.call('HDEL', KEYS[3], ARGV[1])
  -- Without an expiry the hash would keep the other (lapsed) records
  -- forever; the HDEL may have emptied it (see absent).
  if redis.pcall('PTTL', KEYS[3]) == -1 then settle(KEYS[3], now, tonumber(ARGV[2]), '') end
  unindex(ARGV[5], KEYS[3])
  return {1, reply}
end
if string.upper(ARGV[6]) == 'SET' then rec.v = ARGV[7] end
rec.e = 0
if pttl > 0 then rec.e = now + pttl end
put(KEYS[3], ARGV[1], rec)
settle(KEYS[3], now, tonumber(ARGV[2]), nil)
return {1, reply}`)

// Fenced runs a write to keys a lock guards, checking the writer's fencing
// token first, and writes nothing when a check fails. The token is the
// grant number in the writer's record of a lock guarding the key (the
// newest, when several of the candidate locks are recorded for it); per
// check:
//
//	current       the token must still be the lock's latest grant (the
//	              counter): EchoMQ's attempts fence;
//	highest-lock  the token must be at least the highest any key the lock
//	              guards has accepted, which the write then records
//	              (Kleppmann's fence, one mark per lock: the field named
//	              after the lock's owner records key, in the counter's hash
//	              of highest tokens);
//	highest       the same with one mark per guarded key (the field named
//	              after the key).
//
// A writer with no record of any candidate lock follows unfenced_writes:
// reject refuses ("UNFENCED <i>", which the proxy words), allow and observe
// write unchecked.
//
// KEYS: per candidate lock its counter, records and hash of highest tokens,
// then the command's own keys (declared for cluster routing). ARGV[1] the
// writer's owner, ARGV[2] the client's protocol (2 or 3), ARGV[3] the
// number of checks; per check: the number of candidate locks, the check,
// the unfenced_writes mode, the guarded key's name; then the command and
// its arguments.
//
// Reply: {tokens, the command's reply}, tokens one per check, space
// separated ("-" for an unfenced write), for the audit. The command's reply
// is converted in the client's protocol (redis.setresp), so a RESP3 client
// keeps its types (a double stays a double). Two limits remain, both
// Valkey's Lua conversion: a null array (LPOP key count on a missing key)
// reaches RESP2 clients as a null bulk, and a null inside an array
// (BITFIELD ... OVERFLOW FAIL) ends the array early for RESP3 clients, as
// RESP3's null becomes Lua's nil.
var Fenced = newScript("fenced", fnFence+fnMark+fnRun+`if ARGV[2] == '3' then redis.setresp(3) end
local e, tokens, marks, ai = fence(KEYS, ARGV, 1, 4, ARGV[1], tonumber(ARGV[3]))
if e then return e end
local reply = run(ARGV, ai)
if type(reply) == 'table' and reply.err then return reply end
mark(marks)
return {table.concat(tokens, ' '), reply}`)

// Scripts lists every script lockproxy sends on a lock command, for tests
// and preloading. Flush is not preloaded: flushes are rare, and its first
// EVALSHA's NOSCRIPT makes the proxy send it as EVAL.
var Scripts = []*Script{Acquire, Release, Holder, Fenced}
