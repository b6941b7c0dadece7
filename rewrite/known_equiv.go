package rewrite

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/lockproxy/lockproxy/scriptcheck"
)

// knownOp is what a known text does, and so which equivalent it gets.
type knownOp uint8

const (
	// opRead: only reads (no equivalent needed: the text itself runs).
	opRead knownOp = iota
	// opRelease: GET == ARGV[1] then DEL (its count) else 0.
	opRelease
	// opReleaseAbsent: as opRelease, and -1 when the lock is absent.
	opReleaseAbsent
	// opRefresh: GET == ARGV[1] then PEXPIRE ARGV[2] (its reply) else 0.
	opRefresh
	// opTouchSetNX: as opRefresh, else SET NX PX ARGV[2] then 1, else 0.
	opTouchSetNX
	// opObtain: redislock's SET NX PX ARGV[3], else a re-SET PX when the
	// value starts with ARGV[1]'s first ARGV[2] bytes.
	opObtain
	// opObtainM, opReleaseM, opRefreshM: redislock v0.10's texts for
	// several keys (MSETNX, MGET), of one key: as opObtain, opRelease and
	// opRefresh, but the lease set by a PEXPIRE after the write, and a
	// release or refresh that does not match answers nil (false), and
	// OK when it does.
	opObtainM
	opReleaseM
	opRefreshM
)

// The equivalent of a known text runs the text's own calls, on the lines
// the text makes them (an error Valkey raises names the script's line,
// and the proxy puts the client's SHA1 in place of the equivalent's), and
// keeps the lock's records as the monitor would around the same calls:
// a lock the call took gets the next grant and the caller's owner record
// and its entry in the locks' index; the caller's release drops its
// record of the released value (current or not: the lock it names is
// gone), its renewal moves its current record. A release or renewal by
// another client that shows the lock's token (the scripts compare the
// value to ARGV[1] before writing) passes, as under the monitor, and
// moves no record of that client's.
//
// ARGV: the client's (argc of them), then keep_lapsed, the epoch clues
// (known, run: EpochClue), the lock's counter, records, the client's owner
// under the lock's rule, the rule's release mode and the locks' index.
//
// The helpers are written on the first line; each equivalent defines only
// those it calls (each closure costs Valkey at every run), on the path
// that calls them where there are several; a release drops its record
// inline (knownDrop), with none.
const (
	knownVars = `local key, n = KEYS[1], @N@
local keep, ck, rk, owner, mode, ik = tonumber(ARGV[n + 1]), ARGV[n + 4], ARGV[n + 5], ARGV[n + 6], ARGV[n + 7], ARGV[n + 8]
`
	// mine is the caller's record of the lock while it holds it (its
	// grant current, its value v), else nil.
	knownMine = `local function mine(v)
  local r = redis.call('HGET', rk, owner)
  if not r then return nil end
  local g, a, e, rv = string.match(r, '^(%d+) (%d+) (%d+) (.*)$')
  if g and rv == v and redis.call('GET', ck) == g then return {g = g, a = tonumber(a), e = tonumber(e), v = rv} end
  return nil
end
`
	// took records the caller's acquisition of the lock with value v and
	// a lease of px ms: as monitor.lua's records does after a SET NX.
	knownTook = `local function took(v, px)
` + fnGrant + fnIndex + `  local gr = grant(ck, redis.call, ARGV[n + 3] == '!', ARGV[n + 3], tonumber(ARGV[n + 2]))
  local e = redis.call('PEXPIRETIME', key)
  local ms = e - px
  redis.call('HSET', rk, owner, string.format('%d %d %d ', gr, ms, e) .. v)
  if index(ik, rk, e, keep, ms, gr) ~= 1 then
` + fnParse + fnPut + fnSettle + `    settle(rk, ms, keep, owner)
  else
    redis.call('PEXPIREAT', rk, e + keep)
  end
end
`
	// knownDrop, after the DEL of a lock whose value was v, drops the
	// caller's record of v (current or not: the lock it names is gone),
	// and the records hash's entry in the locks' index with its last
	// record. Inline, not a function (no closure to make): one HGETALL
	// tells both whether the caller has a record and whether it is the
	// last. A record without a lease (e 0) may leave a hash without an
	// expiry: settle gives it one, or deletes it.
	knownDrop = `local all = redis.call('HGETALL', rk)
for i = 1, #all, 2 do
  if all[i] == owner then
    local e, rv = string.match(all[i + 1], '^%d+ %d+ (%d+) (.*)$')
    if rv == v then
      redis.call('HDEL', rk, owner)
      if #all == 2 then redis.pcall('ZREM', ik, rk)
      elseif e == '0' and redis.pcall('PTTL', rk) == -1 then
` + fnParse + fnPut + fnSettle + `        local t = redis.call('TIME')
        settle(rk, t[1] * 1000 + math.floor(t[2] / 1000), keep, '')
        if redis.pcall('EXISTS', rk) ~= 1 then redis.pcall('ZREM', ik, rk) end
      end
    end
    break
  end
end
`
	// moved moves the caller's record rec to the lock's value v and
	// lease after the caller changed them.
	knownMoved = `local function moved(rec, v)
  local e = redis.call('PEXPIRETIME', key)
  if e < 0 then e = 0 end
  if v ~= rec.v or e ~= rec.e then
    local ms
    if e > 0 then ms = e - redis.call('PTTL', key) else
      local t = redis.call('TIME')
      ms = t[1] * 1000 + math.floor(t[2] / 1000)
    end
` + fnParse + fnPut + fnSettle + `    rec.v, rec.e = v, e
    put(rk, owner, rec)
    settle(rk, ms, keep, nil)
  end
end
`
)

// knownDropLine is knownDrop on one line (an op's line).
var knownDropLine = oneLine(knownDrop)

// oneLine is Lua text on one line (its statements need no line breaks),
// to go on an op's line: a helper defined where it is used is made only
// on that path.
func oneLine(lua string) string { return strings.ReplaceAll(lua, "\n", " ") }

// knownRefusal is monitor.lua's refusal of a write to a held lock by a
// client that neither holds it nor shows its token, raised as the
// monitor's redis.call raises it.
const knownRefusal = `error({err = 'NOTOWNER lockproxy refused SET of "' .. string.gsub(string.sub(key, 1, 100), '[%c"\\]', '?') .. '" inside a script: this client holds no grant of the lock, and the script was not given the lock\'s token (its value, or a Redisson-style lock\'s owner field) in ARGV; pass the token in ARGV, as the lock libraries\' release scripts do'})`

// The equivalents' bodies, by op: the helpers they use, and the lines
// after them (the first of which goes on the helpers' line). Each call
// that can raise an error sits on the line the text has it on.
var knownOps = map[knownOp]struct {
	argc    int
	helpers string
	lines   []string
}{
	opRelease: {1, "", []string{
		`local v = redis.call('GET', key) if v == ARGV[1] then local d = redis.call('DEL', key) ` + knownDropLine + ` return d else return 0 end`}},
	opReleaseAbsent: {1, "", []string{
		`local v = redis.call('GET', key) if v == ARGV[1] then local d = redis.call('DEL', key) ` + knownDropLine + ` return d elseif v == false then return -1 else return 0 end`}},
	opRefresh: {2, knownMine + knownMoved, []string{
		`local v = redis.call('GET', key) if v == ARGV[1] then local rec = mine(v) local r = redis.call('PEXPIRE', key, ARGV[2]) if rec then moved(rec, v) end return r else return 0 end`}},
	opTouchSetNX: {2, "", []string{
		`local v = redis.call('GET', key) if v == ARGV[1] then ` + oneLine(knownMine+knownMoved) + ` local rec = mine(v) local r = redis.call('PEXPIRE', key, ARGV[2]) if rec then moved(rec, v) end return r elseif redis.call('SET', key, ARGV[1], 'PX', ARGV[2], 'NX') then ` + oneLine(knownTook) + ` took(ARGV[1], tonumber(ARGV[2])) return 1 else return 0 end`}},
	opObtain: {3, "", []string{
		`if redis.call('SET', key, ARGV[1], 'NX', 'PX', ARGV[3]) then ` + oneLine(knownTook) + ` took(ARGV[1], tonumber(ARGV[3])) return redis.status_reply('OK') end`,
		``,
		`local offset = tonumber(ARGV[2])`,
		`if redis.call('GETRANGE', key, 0, offset-1) == string.sub(ARGV[1], 1, offset) then ` + oneLine(knownMine+knownMoved) + ` local v = redis.call('GET', key) local rec = mine(v) if not rec and v ~= ARGV[1] and mode ~= 'observe' and not (string.sub(mode, -1) == '+' and redis.call('HEXISTS', rk, owner) == 0) then ` + knownRefusal + ` end local r = redis.call('SET', key, ARGV[1], 'PX', ARGV[3]) if rec then moved(rec, ARGV[1]) end return r end`,
	}},
	// MGET never raises WRONGTYPE (a key of another type reads nil), and
	// MSETNX and MSET take any key: the only call that can raise is the
	// GETRANGE, on line 18 of obtain.lua.
	opReleaseM: {1, "", []string{
		`local v = redis.call('MGET', key)[1] if v ~= ARGV[1] then return false end redis.call('DEL', key) ` + knownDropLine + ` return redis.status_reply('OK')`}},
	opRefreshM: {2, knownMine + knownMoved, []string{
		`local v = redis.call('MGET', key)[1] if v ~= ARGV[1] then return false end local rec = mine(v) redis.call('PEXPIRE', key, ARGV[2]) if rec then moved(rec, v) end return redis.status_reply('OK')`}},
	opObtainM: {3, "", append(append([]string{
		`if redis.call('MSETNX', key, ARGV[1]) == 1 then redis.call('PEXPIRE', key, ARGV[3]) ` + oneLine(knownTook) + ` took(ARGV[1], tonumber(ARGV[3])) return redis.status_reply('OK') end local offset = tonumber(ARGV[2])`},
		make([]string, 16)...),
		`if redis.call('GETRANGE', key, 0, offset-1) ~= string.sub(ARGV[1], 1, offset) then return false end `+oneLine(knownMine+knownMoved)+` local v = redis.call('GET', key) local rec = mine(v) if not rec and v ~= ARGV[1] and mode ~= 'observe' and not (string.sub(mode, -1) == '+' and redis.call('HEXISTS', rk, owner) == 0) then `+knownRefusal+` end redis.call('MSET', key, ARGV[1]) redis.call('PEXPIRE', key, ARGV[3]) if rec then moved(rec, ARGV[1]) end return redis.status_reply('OK')`)},
}

// equivalent makes a known text's equivalent script.
func equivalent(k *known) *Script {
	op := knownOps[k.Op]
	head := strings.ReplaceAll(knownVars, "@N@", string(rune('0'+op.argc))) + op.helpers
	head = strings.ReplaceAll(strings.TrimSuffix(head, "\n"), "\n", " ")
	lines := op.lines
	var b strings.Builder
	b.WriteString(head)
	// The helpers fill line 1; the op's lines start on the text's k.Line.
	b.WriteString(" ")
	b.WriteString(strings.Repeat("\n", k.Line-1))
	b.WriteString(strings.Join(lines, "\n"))
	body := b.String()
	sum := sha1.Sum([]byte(body))
	return &Script{Name: "known " + k.Lib + " " + k.Name, Body: body, SHA: hex.EncodeToString(sum[:]), Client: k.SHA}
}

// SeedKnown gives a script cache the known texts, as if loaded: an EVALSHA
// of one runs through lockproxy even if no client sent its body through
// it (lockproxy knows it), and SCRIPT EXISTS answers 1 for it, which
// agrees. A SCRIPT FLUSH forgets them, as Valkey would, until a client
// sends one again (EVAL, SCRIPT LOAD).
func SeedKnown(c *scriptcheck.Cache) *scriptcheck.Cache {
	if c != nil {
		for _, t := range knownTexts {
			c.Learn([]byte(t.Text))
		}
	}
	return c
}
