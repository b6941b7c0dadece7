package rewrite

import (
	"bytes"
	"strings"
	"sync"
)

// A client's script that writes keys a lock guards runs inside a wrapper:
// lockproxy's check first, then the client's body, in one script, so one
// atomic step. The wrapper is the client's own text with a prologue put
// in front of its first line, on that same line, and "end" plus a tail
// call after its last:
//
//	[#!lua ... line, kept first]
//	<prologue, no newline>local function __lockproxy_body(...) <line 1 of the body>
//	<line 2 of the body>
//	...
//	end return __lockproxy_body(...)
//
// Why the client cannot tell the difference:
//
//   - Every line of the body keeps its number, so Valkey's errors name the
//     same user_script:LINE; the SHA1 in error messages is the wrapper's,
//     and Unwrap puts the client's back (both are 40 hex digits: a RESP3
//     blob error keeps its length).
//   - The body runs as a function called in a tail call with the chunk's
//     own arguments (...): its return value is the script's, its errors
//     propagate unchanged, error(msg, 2) finds no caller line as at the
//     top of a script, and its locals, upvalues and return statements mean
//     what they meant at the top.
//   - KEYS and ARGV are the client's: lockproxy's keys and arguments come
//     after them, and the prologue moves them into its own locals and
//     clears them from the two tables (from the end, so # gives the
//     client's counts) before the body starts. The prologue's helpers are
//     locals of a do block: the body cannot see them.
//   - A "#!lua" first line (flags=..., the script's RESP and replication
//     mode) stays the first line, so Valkey applies the same flags; the
//     prologue makes no call that redis.setresp or redis.set_repl affects
//     later, and a script without writes (flags=no-writes) is never
//     wrapped.
//
// What differs: the prologue's own reads and writes (HGET of the owner
// records, HSET of a fence mark) run before the body, and a refusal
// (STALE, UNFENCED) returns before any of it.
//
// Lua's limits are the client's too: the body's top-level locals become a
// function's (the same limit of 200), and it gains no upvalue the client
// did not have.

// The wrapper's prologue takes lockproxy's keys and arguments off the end
// of KEYS and ARGV (the last element of ARGV is the number of lockproxy's
// arguments, the one before it the number of lockproxy's keys), checks the
// fence, and notes the value (or absence) of each lock the script may
// change. Its arguments: the number of fence keys and of fence arguments,
// the fence's arguments (see Fenced, without the protocol), then, for the
// locks, the owner, keep_lapsed and the number of locks; its keys: the
// fence's, then (lock, counter, records) per lock. The marks are recorded
// before the body runs: a mark recorded for a write that then fails is
// one no lower token could pass anyway, as a successor holds it.
//
// Each wrapper carries only the parts it uses (a function defined is a
// closure made at every run): the fence, the locks, or both.
func wrapPrologue(fence, locks bool) string {
	var b strings.Builder
	b.WriteString(`local __lockproxy, __lockproxy_after
do
local L = tonumber(ARGV[#ARGV])
local a0, nk = #ARGV - L, tonumber(ARGV[#ARGV - 1])
local k0 = #KEYS - nk
local K, A = {}, {}
for i = 1, nk do K[i] = KEYS[k0 + i] end
for i = 1, L - 2 do A[i] = ARGV[a0 + i] end
for i = #KEYS, k0 + 1, -1 do KEYS[i] = nil end
for i = #ARGV, a0 + 1, -1 do ARGV[i] = nil end
local nfk, nfa = tonumber(A[1]), tonumber(A[2])
`)
	if fence {
		b.WriteString(fnFence + fnMark + `local e, _, marks = fence(K, A, 1, 5, A[3], tonumber(A[4]))
if e then __lockproxy = e else mark(marks) end
`)
	}
	if locks {
		// The caller's record moves only when it held the lock before the
		// body ran (its record's value and grant current): released, the
		// record goes (and the hash is settled only when it may have no
		// expiry, as in Release); re-set or its lease moved, it follows.
		// The body, or the HDEL of the caller's record, may have deleted a
		// key the wrapper reads after: those reads are pcalls, any refusal
		// but WRONGTYPE meaning absent (see absent in scripts.go).
		// The common paths (a grant to a fresh hash, a release) run inline;
		// the helpers for the others are made only when one is taken
		// (lp_fns: each function defined is a closure made at every run).
		// Valkey's clock is read only on the paths that write a time.
		b.WriteString(`local function lp_fns() ` + fnParse + fnPut + fnSettle + `return parse, put, settle end
local g = 3 + nfa
if not __lockproxy then
local owner, n, before = A[g], (nk - nfk) / 3, {}
for i = 1, n do
local v = redis.pcall('GET', K[nfk + 3 * i - 2])
if type(v) == 'table' then v = '' end
before[i] = v
end
__lockproxy_after = function()
redis.set_repl(redis.REPL_ALL)
for i = 1, n do
local k = nfk + 3 * i - 2
local key, ck, rk = K[k], K[k + 1], K[k + 2]
local now = redis.pcall('GET', key)
if type(now) == 'table' then now = string.sub(now.err, 1, 9) == 'WRONGTYPE' and '' end
local was = before[i]
if not was then
if now then
local gr = redis.call('INCR', ck)
local t = redis.call('TIME')
local ms = t[1] * 1000 + math.floor(t[2] / 1000)
local e = redis.call('PTTL', key)
if e > 0 then e = ms + e else e = 0 end
local fresh = redis.call('EXISTS', rk) == 0
redis.call('HSET', rk, owner, string.format('%d %d %d ', gr, ms, e) .. now)
if not fresh then
local _, _, settle = lp_fns()
settle(rk, ms, tonumber(A[g + 1]), owner)
elseif e > 0 then
redis.call('PEXPIREAT', rk, e + A[g + 1])
end
end
else
local r = redis.call('HGET', rk, owner)
local rg, re, rv
if r then rg, re, rv = string.match(r, '^(%d+) %d+ (%d+) (.*)$') end
if rg and rv == was and redis.call('GET', ck) == rg then
if not now then
redis.call('HDEL', rk, owner)
if re == '0' and redis.pcall('PTTL', rk) == -1 then
local _, _, settle = lp_fns()
local t = redis.call('TIME')
settle(rk, t[1] * 1000 + math.floor(t[2] / 1000), tonumber(A[g + 1]), '')
end
else
local t = redis.call('TIME')
local ms = t[1] * 1000 + math.floor(t[2] / 1000)
local e = redis.call('PTTL', key)
if e > 0 then e = ms + e else e = 0 end
if now ~= rv or e ~= tonumber(re) then
local parse, put, settle = lp_fns()
local rec = parse(r)
rec.v, rec.e = now, e
put(rk, owner, rec)
settle(rk, ms, tonumber(A[g + 1]), nil)
end
end
end
end
end
end
end
`)
	}
	b.WriteString(`end
if __lockproxy then return __lockproxy end
local function __lockproxy_body(...) `)
	return oneLine(b.String())
}

// The two endings: a tail call when nothing is left to do after the body
// (its errors and error levels exactly the script's own), or the locks'
// records after it.
const (
	wrapTail  = "\nend return __lockproxy_body(...)"
	wrapLocks = "\nend local __lockproxy_r = __lockproxy_body(...) __lockproxy_after() return __lockproxy_r"
)

// oneLine joins a comment-free Lua text into one line.
func oneLine(lua string) string {
	return strings.Join(strings.Fields(lua), " ") + " "
}

// WrapBody is the wrapper of a client's script body, with the fence check
// and, after the body, the records of the locks it may change. Exported
// for the offline checks (luaeval's tests run wrappers against Valkey).
func WrapBody(body string, fence, locks bool) string {
	end := wrapTail
	if locks {
		end = wrapLocks
	}
	pro := wrapPrologue(fence, locks)
	var b strings.Builder
	b.Grow(len(pro) + len(body) + len(end) + 1)
	if strings.HasPrefix(body, "#!") {
		line, rest, _ := strings.Cut(body, "\n")
		b.WriteString(line)
		b.WriteByte('\n')
		body = rest
	}
	b.WriteString(pro)
	b.WriteString(body)
	b.WriteString(end)
	return b.String()
}

// maxWrappers bounds the wrappers kept; past it the cache starts over
// (each is rebuilt from its client's body on its next use).
const maxWrappers = 1024

var wrappers = struct {
	sync.RWMutex
	byClient map[wrapID]*Script // by the client script's SHA1 and the form
	bySHA    map[string]*Script // by the wrapper's own
}{byClient: map[wrapID]*Script{}, bySHA: map[string]*Script{}}

type wrapID struct {
	sha          string
	fence, locks bool
}

// wrapped returns the wrapper of a client's script, made once per script
// and form.
func wrapped(body scriptBody, clientSHA string, fence, locks bool) *Script {
	id := wrapID{clientSHA, fence, locks}
	wrappers.RLock()
	w := wrappers.byClient[id]
	wrappers.RUnlock()
	if w != nil {
		return w
	}
	wrappers.Lock()
	defer wrappers.Unlock()
	if w := wrappers.byClient[id]; w != nil {
		return w
	}
	if len(wrappers.byClient) >= maxWrappers {
		wrappers.byClient = map[wrapID]*Script{}
		wrappers.bySHA = map[string]*Script{}
	}
	w = newScript("wrapper of "+clientSHA, WrapBody(body.String(), fence, locks))
	w.Client = clientSHA
	wrappers.byClient[id] = w
	wrappers.bySHA[w.SHA] = w
	return w
}

// ScriptBySHA finds a script lockproxy sends by its SHA1 (for the EVAL
// that follows a NOSCRIPT): one of Scripts, or a wrapper still cached.
func ScriptBySHA(sha string) *Script {
	for _, sc := range Scripts {
		if sc.SHA == sha {
			return sc
		}
	}
	wrappers.RLock()
	defer wrappers.RUnlock()
	return wrappers.bySHA[sha]
}

// Unwrap gives a wrapper's reply the client's script's SHA1 where Valkey
// named the wrapper's (in error messages). Other scripts' replies pass.
func (sc *Script) Unwrap(reply []byte) []byte {
	if sc.Client == "" || len(reply) == 0 || (reply[0] != '-' && reply[0] != '!') {
		return reply
	}
	if !bytes.Contains(reply, []byte(sc.SHA)) {
		return reply
	}
	return bytes.ReplaceAll(reply, []byte(sc.SHA), []byte(sc.Client))
}

// wrapPlan runs a client's script (body, as EVAL or EVALSHA of it would)
// inside its wrapper: with the checks of fc (nil: none), and the grants
// of acq (nil: none). KEYS and ARGV are the client's, then lockproxy's
// (see wrapPrologue).
func wrapPlan(body scriptBody, clientSHA string, keys, argv [][]byte, fc *fenceCheck, acq *acquisitions, effects []Effect) Plan {
	w := wrapped(body, clientSHA, fc != nil, acq != nil)
	var fkeys, fargs [][]byte
	if fc != nil {
		fkeys, fargs, effects = fc.keys, fc.args, append(fc.effects, effects...)
	}
	skeys := make([][]byte, 0, len(keys)+len(fkeys)+3*len(acq.locks()))
	skeys = append(append(skeys, keys...), fkeys...)
	sargs := make([][]byte, 0, len(argv)+len(fargs)+7)
	sargs = append(append(sargs, argv...), itoa(int64(len(fkeys))), itoa(int64(len(fargs))))
	sargs = append(sargs, fargs...)
	if acq != nil {
		skeys = append(skeys, acq.keys...)
		sargs = append(sargs, acq.owner, acq.keep, itoa(int64(len(acq.keys)/3)))
	}
	nk, na := len(skeys)-len(keys), len(sargs)-len(argv)+2
	sargs = append(sargs, itoa(int64(nk)), itoa(int64(na)))
	return Plan{Kind: Run, Script: w, Keys: skeys, Args: sargs, Shape: ScriptReply, Effects: effects}
}

// acquisitions are the locks a script may take: (lock, counter, records)
// per lock in keys, and who takes them.
type acquisitions struct {
	keys        [][]byte
	owner, keep []byte
}

func (a *acquisitions) locks() [][]byte {
	if a == nil {
		return nil
	}
	return a.keys
}
