package rewrite

import (
	"bytes"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
)

// While lock rules exist, a client's script runs under lockproxy's
// monitor: every call the script makes to Valkey is checked when it runs,
// on its real command and arguments, before it reaches Valkey's own
// redis.call (complete mediation, as an ACL check works). The script is
// sent as one chunk:
//
//	[#!lua ... line, kept first]
//	local redis, server, _G, getfenv, setfenv, loadstring, load, newproxy,
//	  ARGV, setmetatable = (function() <the monitor (monitor.lua)> end)(); <line 1 of the body>
//	<line 2 of the body>
//	...
//
// with the monitor on the body's first line, so every line keeps its
// number. The body is the chunk's own top level: nothing of it can close
// a block of the monitor's or run before the monitor (no text check is
// needed to keep it inside anything), and the only names of the
// monitor's in its scope are the ten locals the monitor returns. Every
// name by which the body could reach Valkey is one of them, a lexical
// seal: no setfenv, which Redis 7.0.15-1~deb12u10 and Valkey with
// lua-enable-insecure-api no do not have. The monitor returns:
//
//   - redis and server: the monitor's; call and pcall are checked, the
//     rest is Valkey's (looked up in the real table, which stays
//     read-only, and takes every write: Valkey refuses it with its own
//     words). redis.call is a table whose call is a coroutine's C
//     function, so an error it raises names the body's user_script:LINE,
//     as Valkey's own does.
//   - ARGV: a copy of the client's arguments (the proxy's own come after
//     them, and only the monitor sees them). KEYS are the client's.
//   - _G: a sealed table (its redis, server, ARGV and the stand-ins
//     below; the rest read from and written to Valkey's globals, which
//     fail with Valkey's own words); getfenv answers it for Valkey's
//     globals; setfenv of a function whose environment is Valkey's is
//     refused; loadstring and load compile a chunk alone, then inside a
//     function with these same parameters; newproxy is refused. Where
//     this Valkey lacks getfenv, setfenv or newproxy, they raise its
//     error. A body whose text names none of these gets nil for them
//     (needsSeal).
//   - setmetatable: for a body that names it, a stand-in that raises
//     Valkey's readonly-table error for redis and _G (Valkey's own
//     setmetatable otherwise).

// The check of a call (monitor.lua's run and mk): first, while the
// deployment gates them (admin_commands), a command that reconfigures
// Valkey is refused (NOADMIN, gate.go), whatever its arguments. Then, if
// no argument may name a protected key (the rules' globs, lockproxy's own
// suffixes and fence keys, as Lua patterns in the text), the call goes
// straight to Valkey, and so does a GET, which only reads. Otherwise the
// monitor's KS table (monitor_ks.go, from Valkey's key specs) or COMMAND
// GETKEYSANDFLAGS says which arguments are keys and what the call does to
// each; a write to
//
//   - one of lockproxy's own keys is refused (LOCKED);
//   - a lock among KEYS passes if the lock is absent (an acquisition: the
//     grant and the owner record are made right after the call), if this
//     client holds it (its record's grant is current), if the script's
//     ARGV carries its token (its value, or the owner field its holder's
//     record names for a Redisson-style hash lock; not under session:
//     user), or as the rule's release: observe or unknown_owner:
//     forward would let a plain command through; otherwise refused
//     (NOTOWNER). After the call the records follow what it did;
//   - a lock not among KEYS is refused (LOCKED): pass it in KEYS;
//   - a key a fence guards passes the fence check the proxy prepared for
//     it when it is among KEYS (STALE, UNFENCED), and is refused when it
//     is not (UNFENCED);
//   - MOVE, MIGRATE and COPY ... DB of any of these are refused.
//
// FLUSHALL, FLUSHDB and SWAPDB follow on_flush. SELECT needs nothing: the
// monitor's own reads and writes happen in the database the script has
// selected, where the lock's records are.
//
// A refused call is an error as an ACL refusal is: redis.call raises it,
// redis.pcall returns it.
//
// A function library carries the same checks inside it (monitor_lib.go),
// with variables where this text has the rules' and the shape's values.

//go:embed monitor.lua
var monitorLua string

// monitorText is monitor.lua without its comment lines.
var monitorText = luaText(monitorLua)

// monitorCore is monitor.lua's checks (between its @@core and @@seal
// lines), monitorSealers its stand-ins of setmetatable and
// redis.setresp (sealedSM between @@sm and @@sm end, sealedSR between @@sr
// and @@sr end: a script's monitor makes each only where it is used), and
// monitorStandIns its sealed stand-ins of getfenv, setfenv, newproxy,
// loadstring and load (between @@stand-ins and @@end): a library's
// monitor (monitor_lib.go) is made of them too, so each has one source.
var (
	monitorCore     = monitorSection("-- @@core", "-- @@seal")
	monitorSealers  = monitorSection("-- @@sm", "-- @@sm end") + monitorSection("-- @@sr", "-- @@sr end")
	monitorStandIns = monitorSection("-- @@stand-ins", "-- @@end")
)

// monitorSection is monitor.lua's text between the lines starting with
// from and to, without comment lines.
func monitorSection(from, to string) string {
	_, s, ok1 := strings.Cut(monitorLua, "\n"+from)
	s, _, ok2 := strings.Cut(s, "\n"+to)
	if !ok1 || !ok2 {
		panic("rewrite: monitor.lua lacks its " + from + " and " + to + " lines")
	}
	return luaText("--" + s)
}

// luaText is Lua text without its comment lines.
func luaText(src string) string {
	var b strings.Builder
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// monitorPrefix and monitorSuffix go around the monitor's text, on the
// body's first line: the ten names the body may reach Valkey by are the
// chunk's locals, set by the monitor before the body runs.
const (
	monitorPrefix = "local redis, server, _G, getfenv, setfenv, loadstring, load, newproxy, ARGV, setmetatable = (function() "
	monitorSuffix = " end)(); "
)

// MonitorShape is what a monitored script's text is made for, beside the
// rules: how many locks among KEYS the proxy passes (6 arguments each),
// and the fence's arguments and keys.
type MonitorShape struct {
	Locks, FenceArgs, FenceKeys int
}

func (sh MonitorShape) extras() int { return 3 + 6*sh.Locks + sh.FenceArgs + sh.FenceKeys }

// monitorRules is the part of the monitor's text the rules decide: Lua
// expressions over an argument a (hot) or a key (own, lockish,
// guardish), and the flush check.
type monitorRules struct {
	hot, own, lock, guard, flush string
	// gate, gateVars: the gate's Lua (gate.go), "" when calls are not
	// gated.
	gate, gateVars string
	// ks: the fast table of keys, a Lua string (monitor_ks.go).
	ks string
	id string // a digest of the above, for the cache
	// The rules' Lua patterns and flush mode, as a library's monitor
	// takes them (monitor_lib.go).
	locks, guards, owns []string
	flushReject         bool
	flushCheck          string // the flush check of on_flush: reject
	flushAllow          string // of on_flush: allow (the checks send a flush to flushed, which raises the epoch)
}

var monitorRulesCache sync.Map // monitorRulesKey → *monitorRules

type monitorRulesKey struct {
	rules *policy.Rules
	flush policy.FlushPolicy
	gate  *commands.Table // nil: no gate
	table *keyspec.Table  // the key specs KS is made of
}

// monitorRules is the monitor's rules with the deployment's gate: a
// library's (which a client may call around lockproxy).
func (d *Decider) monitorRules() *monitorRules { return d.rulesWithGate(d.gateTable()) }

// monitorRulesFor is a script's, run for session s: without the gate when
// s may reconfigure Valkey.
func (d *Decider) monitorRulesFor(s Session) *monitorRules {
	g := d.gateTable()
	if g != nil && mayReconfigure(s) {
		g = nil
	}
	return d.rulesWithGate(g)
}

func (d *Decider) rulesWithGate(g *commands.Table) *monitorRules {
	k := monitorRulesKey{d.Rules, d.OnFlush, g, d.Table}
	if m, ok := monitorRulesCache.Load(k); ok {
		return m.(*monitorRules)
	}
	m := buildMonitorRules(d.Rules, d.OnFlush)
	if g != nil {
		m.gateVars, m.gate = gateLua(g.GatedList())
	}
	m.ks = luaQuote(ksFor(d.Table))
	sum := sha1.Sum([]byte(m.id + "\x00" + m.gate + "\x00" + m.ks))
	m.id = hex.EncodeToString(sum[:])
	monitorRulesCache.Store(k, m)
	return m
}

func buildMonitorRules(rules *policy.Rules, onFlush policy.FlushPolicy) *monitorRules {
	var locks, guards, owns []string
	seen := map[string]bool{}
	add := func(dst *[]string, p string) {
		if !seen[p] {
			seen[p] = true
			*dst = append(*dst, p)
		}
	}
	all := rules.All()
	for i := range all {
		add(&locks, luaGlob(all[i].Pattern.String()))
		if f := all[i].Fencing; f != nil {
			for _, g := range f.GuardGlobs() {
				add(&guards, luaGlob(g.String()))
			}
			for _, g := range f.OwnGlobs() {
				add(&owns, luaGlob(g.String()))
			}
		}
	}
	finds := func(v string, pats []string) []string {
		out := make([]string, 0, len(pats))
		for _, p := range pats {
			if lit, ok := suffixLiteral(p); ok {
				// A plain find of the suffix where it must start: a
				// pattern's leading ".*" tries every length of it.
				out = append(out, "find("+v+", "+luaQuote(lit)+", -"+strconv.Itoa(len(lit))+", true)")
				continue
			}
			out = append(out, "find("+v+", "+luaQuote(p)+")")
		}
		return out
	}
	or := func(parts []string) string {
		if len(parts) == 0 {
			return "false"
		}
		return strings.Join(parts, " or ")
	}
	m := &monitorRules{}
	// lockproxy's own keys: every one but the epoch hash holds
	// ":lockproxy:" (see Decider.own), the flush probe too.
	hot := append([]string{"find(a, ':lockproxy:', 1, true)", "a == " + luaQuote(EpochKey)}, finds("a", locks)...)
	hot = append(hot, finds("a", guards)...)
	m.hot = or(append(hot, finds("a", owns)...))
	own := []string{"key == " + luaQuote(EpochKey), "find(key, '" + suffixPattern(counterSuffix) + "')", "find(key, '" + suffixPattern(recordsSuffix) + "')", "find(key, '" + suffixPattern(waitSuffix) + "')", "find(key, '" + suffixPattern(indexSuffix) + "')", "find(key, '" + suffixPattern(epochSuffix) + "')"}
	own = append(own, "key == "+luaQuote(FlushProbeKey))
	m.own = "key == " + luaQuote(EpochKey) + " or find(key, ':lockproxy:', 1, true) and (" + or(own[1:]) + ")"
	if len(owns) > 0 {
		m.own += " or " + or(finds("key", owns))
	}
	m.lock = or(finds("key", locks))
	m.guard = or(finds("key", guards))
	m.locks, m.guards, m.owns = locks, guards, owns
	m.flushCheck = `  local c = ...
  if type(c) == 'string' and #c >= 6 and #c <= 8 then
    c = string.lower(c)
    if c == 'flushall' or c == 'flushdb' or c == 'swapdb' then
      return {err = 'LOCKED lockproxy refused ' .. string.upper(c) .. ' inside a script: it would delete every lock without checking who holds it (on_flush: reject); delete keys by name, or set on_flush: allow in the lockproxy config'}
    end
  end`
	m.flushAllow = `  local c = ...
  if type(c) == 'string' and #c >= 7 and #c <= 8 then
    c = string.lower(c)
    if c == 'flushall' or c == 'flushdb' then hot = true end
  end`
	if onFlush == policy.FlushReject {
		m.flush, m.flushReject = m.flushCheck, true
	} else {
		m.flush = m.flushAllow
	}
	m.ks = luaQuote(ksFallback)
	sum := sha1.Sum([]byte(m.hot + "\x00" + m.own + "\x00" + m.lock + "\x00" + m.guard + "\x00" + m.flush))
	m.id = hex.EncodeToString(sum[:])
	return m
}

// suffixLiteral reports whether a pattern of luaGlob's is "any key ending
// in lit" (a glob "*lit", lit without wildcards), and lit.
func suffixLiteral(pat string) (string, bool) {
	if !strings.HasPrefix(pat, "^.*") || !strings.HasSuffix(pat, "$") || len(pat) < 5 {
		return "", false
	}
	var b strings.Builder
	body := pat[3 : len(pat)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '%' && i+1 < len(body):
			i++
			c = body[i]
			if c == 'z' {
				c = 0
			}
		case c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9'):
		default:
			return "", false
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// suffixPattern is a Lua pattern for a key ending in suffix.
func suffixPattern(suffix string) string {
	var b strings.Builder
	for i := 0; i < len(suffix); i++ {
		luaLit(&b, suffix[i])
	}
	return b.String() + "$"
}

// monitorFns are the records' helpers the checks use; the fence's
// (fnFence, fnMark) are made only on their paths.
const monitorFns = fnParse + fnPut + fnSettle

// MonitorBody is the text Valkey runs for a client's script under the
// monitor (exported for the offline checks: luaeval's tests run it).
func MonitorBody(body string, sh MonitorShape, m *monitorRules) string {
	mon := strings.NewReplacer(
		"@NX@", strconv.Itoa(sh.extras()),
		"@L@", strconv.Itoa(sh.Locks),
		"@FA@", strconv.Itoa(sh.FenceArgs),
		"@HOT@", m.hot,
		"@OWN@", m.own,
		"@LOCK@", m.lock,
		"@GUARD@", m.guard,
		"@FLUSH@", m.flush,
		"@GATE@", m.gate,
		"@GATEVARS@", m.gateVars,
		"@KS@", m.ks,
		"@FNS@", monitorFns,
		"@FENCE@", fnFence,
		"@MARK@", fnMark,
		"@GRANT@", fnGrant,
		"@DELAYFNS@", fnGrant+fnSlotChanged,
		"@IDX@", fnIndex,
		"@SEAL@", strconv.FormatBool(needsSeal(body)),
		"@SM@", strconv.FormatBool(strings.Contains(body, "setmetatable")),
	).Replace(monitorText)
	// One line: every snippet in it holds no comment and no line that
	// needs its line break, and the ";" ends the statement, so a body
	// that starts with "(" starts a statement of its own.
	mon = strings.ReplaceAll(mon, "\n", " ")
	var b strings.Builder
	b.Grow(len(body) + len(mon) + len(monitorPrefix) + len(monitorSuffix) + 1)
	if strings.HasPrefix(body, "#!") {
		line, rest, _ := strings.Cut(body, "\n")
		b.WriteString(line)
		b.WriteByte('\n')
		body = rest
	}
	b.WriteString(monitorPrefix)
	b.WriteString(mon)
	b.WriteString(monitorSuffix)
	b.WriteString(body)
	return b.String()
}

// needsSeal reports whether a body's text names any of _G, getfenv,
// setfenv, load (and so loadstring) and newproxy: only then can it reach
// Valkey's globals table, a chunk compiled from a string, or a finalizer,
// and the monitor makes their sealed stand-ins (a Lua name cannot be
// spelled another way, so a text without them cannot name them).
func needsSeal(body string) bool {
	for _, w := range [...]string{"_G", "getfenv", "setfenv", "load", "newproxy"} {
		if strings.Contains(body, w) {
			return true
		}
	}
	return false
}

// MonitorRulesFor is the rules' part of the monitor, for the offline checks.
func MonitorRulesFor(rules *policy.Rules, onFlush policy.FlushPolicy) *monitorRules {
	return buildMonitorRules(rules, onFlush)
}

// monitored returns the monitored text of a client's script, made once
// per script, shape and rules.
func monitored(body scriptBody, clientSHA string, sh MonitorShape, m *monitorRules) *Script {
	id := wrapID{sha: clientSHA, shape: sh, rules: m.id}
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
	// Not newScript: the client's lines are its own (a long string's line
	// may start with "--"), and the monitor's text has no comment lines.
	text := MonitorBody(body.String(), sh, m)
	sum := sha1.Sum([]byte(text))
	w = &Script{Name: "monitored " + clientSHA, Body: text, SHA: hex.EncodeToString(sum[:])}
	w.Client = clientSHA
	wrappers.byClient[id] = w
	wrappers.bySHA[w.SHA] = w
	return w
}

// clusterRun stands for the run id in a monitored script's epoch clues in
// front of a cluster: its grants take the node's config epoch (fnGrant's
// cluster flag).
var clusterRun = []byte("!")

// monitorPlan runs a client's script (body, as EVAL or EVALSHA of it
// would) under the monitor. Its ARGV are the client's, then lockproxy's:
// keep_lapsed, the epoch clues (known, run: EpochClue); per lock among
// KEYS its key, counter, records, the client's owner under its rule, the
// rule's release mode and the locks' index (index.go); then the
// fence checks of the guarded keys among KEYS (as Fenced takes them,
// without the protocol), then their keys.
func (d *Decider) monitorPlan(cmd string, body scriptBody, clientSHA string, keys, argv [][]byte, s Session) Plan {
	sh, sargs, dur := d.monitorArgs(cmd, keys, argv, s)
	w := monitored(body, clientSHA, sh, d.monitorRulesFor(s))
	return Plan{Kind: Run, Script: w, Keys: keys, Args: sargs, Shape: ScriptReply, Clue: monitorClue(sh, argv),
		Durable: dur.d, DurableLocks: dur.locks}
}

// scriptDurability is what a monitored call's durability needs (Plan's
// Durable and DurableLocks).
type scriptDurability struct {
	d     *policy.DurabilityConfig
	locks [][]byte
}

// stricter keeps the stricter of two durabilities (more replicas).
func stricter(d, e *policy.DurabilityConfig) *policy.DurabilityConfig {
	if e != nil && (d == nil || e.Replicas > d.Replicas) {
		return e
	}
	return d
}

// monitorArgs is a monitored call's shape and arguments: the client's,
// then lockproxy's (see monitorPlan).
func (d *Decider) monitorArgs(cmd string, keys, argv [][]byte, s Session) (MonitorShape, [][]byte, scriptDurability) {
	var locks [][]byte
	var dur scriptDurability
	var plain []touch
	n := 0
	// The locks and guarded keys among KEYS and ARGV: the monitor checks
	// a write to a lock or a guarded key only with what the proxy
	// prepared for it here (the lock's keys and the client's owner, the
	// fence's check), and refuses one it has nothing for.
	for _, list := range [2][][]byte{keys, argv} {
		for _, k := range list {
			r := d.Rules.Match(k)
			if r == nil {
				if d.Rules.Fenced() && guarded(d.Rules, k) && !hasTouch(plain, k) {
					plain = append(plain, touch{key: k, flags: keyspec.KeyRW})
				}
				continue
			}
			dup := false
			for i := 0; i < len(locks); i += 6 {
				if string(locks[i]) == string(k) {
					dup = true
				}
			}
			if dup {
				continue
			}
			locks = append(locks, k, d.counter(r, k), RecordsKey(k), []byte(s.Owner(r)), monitorMode(r), IndexKey(k, d.Cluster))
			if r.Durability != nil {
				dur.d = stricter(dur.d, r.Durability)
				dur.locks = append(dur.locks, locks[len(locks)-6:len(locks)-2]...)
			}
			n++
		}
	}
	var fc *fenceCheck
	if len(plain) > 0 {
		fc = d.fenceChecks(cmd, plain, s, nil)
	}
	if fc != nil {
		for _, e := range fc.effects {
			dur.d = stricter(dur.d, e.Rule.Durability)
		}
	}
	sh := MonitorShape{Locks: n}
	if fc != nil {
		sh.FenceArgs, sh.FenceKeys = len(fc.args), len(fc.keys)
	}
	sargs := make([][]byte, 0, len(argv)+sh.extras()+8)
	run, known := d.Epoch.args()
	if d.Cluster {
		// In front of a cluster the grant mints under the node's config
		// epoch (fnGrant), as SET NX does: the run id's place says so.
		run = clusterRun
	}
	sargs = append(append(append(sargs, argv...), d.keep(), known, run), locks...)
	if fc != nil {
		sargs = append(append(sargs, fc.args...), fc.keys...)
	}
	return sh, sargs, dur
}

// monitorMode is a lock's mode as the monitor takes it: "=" first when
// the rule's session is user (a token in ARGV then counts for no one:
// only the holder's user, which holds the grant, may change the lock),
// the rule's release mode, then "/" and max_lease in ms when the rule has
// one (an acquisition inside the script then gets SET NX's lease and
// lock-delay checks, monitor.lua's delay).
func monitorMode(r *policy.Rule) []byte {
	m := releaseMode(r)
	if r.Session == policy.SessionUser {
		m = userModes[string(m)] // (no allocation: a map index by a []byte conversion)
	}
	if r.MaxLease <= 0 {
		return m
	}
	return strconv.AppendInt(append(append([]byte(nil), m...), '/'), r.MaxLease.Milliseconds(), 10)
}

// userModes are the release modes with the "=" of session: user.
var userModes = func() map[string][]byte {
	m := map[string][]byte{}
	for _, x := range [][]byte{modeRewrite, modeRewriteFwd, modeReject, modeRejectFwd, modeObserve} {
		m[string(x)] = append(append(make([]byte, 0, 1+len(x)), '='), x...)
	}
	return m
}()

// monitorClue is where a monitored call's epoch clue is in its arguments
// (after the client's ARGV and keep_lapsed), 0 when it declares no lock.
func monitorClue(sh MonitorShape, argv [][]byte) int {
	if sh.Locks == 0 {
		return 0
	}
	return len(argv) + 1
}

// unmonitored reports whether a script may run without the monitor, by a
// check that is obviously sound: its text names none of redis, server,
// _G, getfenv and load (nor loadstring), so it cannot reach a function
// that calls Valkey, by name or by a name it builds; nor newproxy, the
// way to a finalizer; nor setfenv, whose level 0 would change every later
// script's environment (see monitor.lua).
func unmonitored(body scriptBody) bool {
	for _, w := range [...]string{"redis", "server", "_G", "getfenv", "setfenv", "load", "newproxy"} {
		if body.b != nil && bytes.Contains(body.b, []byte(w)) || body.b == nil && strings.Contains(body.s, w) {
			return false
		}
	}
	return true
}

func hasTouch(ts []touch, k []byte) bool {
	for _, t := range ts {
		if string(t.key) == string(k) {
			return true
		}
	}
	return false
}
