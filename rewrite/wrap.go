package rewrite

import (
	"bytes"
	"fmt"
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
//     locals of a do block: the body cannot see them. The values the
//     records' code reads after the body (wrapAfter) are top-level locals
//     named __lockproxy_*, as the body's own function is: names no script
//     uses.
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
// of KEYS and ARGV, checks the fence, and notes the value (or absence) of
// each lock the script may change. A wrapper is made for one shape (see
// WrapShape): how many keys and arguments are lockproxy's is written into
// its text, not sent with every call (each argument costs Valkey about as
// much as a GET in the script; the loops the counts would need cost more).
// Its arguments: the fence's (see Fenced, without the protocol), then, for
// the locks, the owner and keep_lapsed; its keys: the fence's, then (lock,
// counter, records) per lock. Inside, K and A hold them in that order.
// The marks are recorded before the body runs: a mark recorded for a
// write that then fails is one no lower token could pass anyway, as a
// successor holds it.
//
// Each wrapper carries only the parts it uses (a function defined is a
// closure made at every run): the fence, the locks, or both.
func wrapPrologue(sh WrapShape) string {
	fence, locks := sh.fence(), sh.Locks > 0
	nk, na := sh.keys(), sh.args()
	var b strings.Builder
	b.WriteString("local __lockproxy, __lockproxy_K, __lockproxy_A, __lockproxy_before\ndo\n")
	fmt.Fprintf(&b, "local nfk, nk, nl = %d, %d, %d\n", sh.FenceKeys, nk, sh.Locks)
	fmt.Fprintf(&b, "local k0, a0 = #KEYS - nk, #ARGV - %d\n", na)
	if nk+na <= maxUnrolled {
		// Table constructors: each table is made at its size, once.
		b.WriteString("local K = {")
		for i := 1; i <= nk; i++ {
			fmt.Fprintf(&b, "KEYS[k0 + %d], ", i)
		}
		b.WriteString("}\nlocal A = {")
		for i := 1; i <= na; i++ {
			fmt.Fprintf(&b, "ARGV[a0 + %d], ", i)
		}
		b.WriteString("}\n")
		for i := nk; i >= 1; i-- {
			fmt.Fprintf(&b, "KEYS[k0 + %d] = nil ", i)
		}
		for i := na; i >= 1; i-- {
			fmt.Fprintf(&b, "ARGV[a0 + %d] = nil ", i)
		}
		b.WriteString("\n")
	} else {
		b.WriteString(`local K, A = {}, {}
for i = 1, nk do K[i] = KEYS[k0 + i] end
for i = 1, #ARGV - a0 do A[i] = ARGV[a0 + i] end
for i = #KEYS, k0 + 1, -1 do KEYS[i] = nil end
for i = #ARGV, a0 + 1, -1 do ARGV[i] = nil end
`)
	}
	if fence {
		b.WriteString(fnFence + fnMark + `local e, _, marks = fence(K, A, 1, 3, A[1], tonumber(A[2]))
if e then __lockproxy = e else mark(marks) end
`)
	}
	if locks {
		// The locks' values before the body runs, for the records' code
		// after it (wrapAfter).
		b.WriteString(`if not __lockproxy then
local before = {}
for i = 1, nl do
local v = redis.pcall('GET', K[nfk + 3 * i - 2])
if type(v) == 'table' then v = '' end
before[i] = v
end
__lockproxy_K, __lockproxy_A, __lockproxy_before = K, A, before
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
// records after it (wrapAfter).
const (
	wrapTail  = "\nend return __lockproxy_body(...)"
	wrapLocks = "\nend local __lockproxy_r = __lockproxy_body(...) "
)

// wrapAfter is the code that keeps the records of the locks a script may
// change true, run after its body returns, inline at the top of the chunk
// (a closure made for it at every run, with its upvalues, cost Valkey as
// much as two of its calls).
func wrapAfter(sh WrapShape) string {
	var b strings.Builder
	b.WriteString("do\n")
	// g: where the owner is in A, after the fence's arguments.
	fmt.Fprintf(&b, "local nfk, g, n = %d, %d, %d\n", sh.FenceKeys, sh.FenceArgs+1, sh.Locks)
	b.WriteString(`local K, A, before = __lockproxy_K, __lockproxy_A, __lockproxy_before
local owner = A[g]
`)
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
	// Valkey's clock is read only on the paths that write a time, and
	// from the lock's own expiry where it has one: inside a script
	// Valkey's time stands still, so PEXPIRETIME less PTTL is the
	// script's "now" to the millisecond, for two integer replies
	// where TIME's reply and its arithmetic cost three times that.
	b.WriteString(`local function lp_fns() ` + fnParse + fnPut + fnSettle + `return parse, put, settle end
redis.set_repl(redis.REPL_ALL)
for i = 1, n do
local k = nfk + 3 * i - 2
local key, ck, rk = K[k], K[k + 1], K[k + 2]
local now = redis.pcall('GET', key)
if type(now) == 'table' then now = string.sub(now.err, 1, 9) == 'WRONGTYPE' and '' end
local was = before[i]
if not was then
if now then
` + fnGrant + `local gr = grant(ck, redis.call)
local e, ms = redis.call('PEXPIRETIME', key)
if e > 0 then ms = e - redis.call('PTTL', key) else
local t = redis.call('TIME')
e, ms = 0, t[1] * 1000 + math.floor(t[2] / 1000)
end
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
local e, ms = redis.call('PEXPIRETIME', key)
if e < 0 then e = 0 end
if now ~= rv or e ~= tonumber(re) then
if e > 0 then ms = e - redis.call('PTTL', key) else
local t = redis.call('TIME')
ms = t[1] * 1000 + math.floor(t[2] / 1000)
end
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
return __lockproxy_r`)
	return oneLine(b.String())
}

// oneLine joins a comment-free Lua text into one line.
func oneLine(lua string) string {
	return strings.Join(strings.Fields(lua), " ") + " "
}

// maxUnrolled bounds the keys and arguments a prologue reads one by one;
// a wrapper for more reads them in loops.
const maxUnrolled = 24

// WrapShape is what a wrapper is made for: the fence's keys and arguments
// (none: no fence check), and the locks whose records it keeps.
type WrapShape struct {
	FenceKeys, FenceArgs, Locks int
}

func (sh WrapShape) fence() bool { return sh.FenceArgs > 0 }

// keys and args count lockproxy's keys and arguments after the client's.
func (sh WrapShape) keys() int { return sh.FenceKeys + 3*sh.Locks }

func (sh WrapShape) args() int {
	if sh.Locks > 0 {
		return sh.FenceArgs + 2 // the owner, keep_lapsed
	}
	return sh.FenceArgs
}

// WrapBody is the wrapper of a client's script body, with the fence check
// and, after the body, the records of the locks it may change. Exported
// for the offline checks (luaeval's tests run wrappers against Valkey).
func WrapBody(body string, sh WrapShape) string {
	end := wrapTail
	if sh.Locks > 0 {
		end = wrapLocks + wrapAfter(sh)
	}
	pro := wrapPrologue(sh)
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
	sha   string
	shape WrapShape
}

// wrapped returns the wrapper of a client's script, made once per script
// and shape.
func wrapped(body scriptBody, clientSHA string, sh WrapShape) *Script {
	id := wrapID{clientSHA, sh}
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
	w = newScript("wrapper of "+clientSHA, WrapBody(body.String(), sh))
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
	var fkeys, fargs [][]byte
	if fc != nil {
		fkeys, fargs, effects = fc.keys, fc.args, append(fc.effects, effects...)
	}
	w := wrapped(body, clientSHA, WrapShape{FenceKeys: len(fkeys), FenceArgs: len(fargs), Locks: len(acq.locks()) / 3})
	skeys := make([][]byte, 0, len(keys)+len(fkeys)+len(acq.locks()))
	skeys = append(append(skeys, keys...), fkeys...)
	sargs := make([][]byte, 0, len(argv)+len(fargs)+2)
	sargs = append(append(sargs, argv...), fargs...)
	if acq != nil {
		skeys = append(skeys, acq.keys...)
		sargs = append(sargs, acq.owner, acq.keep)
	}
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
