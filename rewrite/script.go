package rewrite

import (
	"bytes"
	"strings"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// script decides EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, and
// learns script bodies from SCRIPT LOAD and FUNCTION LOAD passing through.
//
// EVAL and EVALSHA run under lockproxy's monitor (monitor.go): every call
// the script makes is checked when it runs, whatever its text. Only
// scripts that cannot reach Valkey, flags=no-writes ones and bodies that
// cannot compile are forwarded as they came (monitorScript). An EVALSHA
// of a script lockproxy has not seen is answered NOSCRIPT, so that
// clients which fall back to EVAL on NOSCRIPT (go-redis, redis-py,
// ioredis, ...) send its body. Bodies are cached by SHA1 in d.Scripts.
//
// FCALL is still judged by the analysis of its library (package
// scriptcheck), as this instance saw it loaded: blind functions are
// refused (BLINDSCRIPT) by default, unknown ones observed; a function of
// a library not seen follows the rule's unknown_sha.
//
// The _RO variants only learn: Valkey refuses writes from them.
func (d *Decider) script(args [][]byte, keys []keyspec.Key, s Session) Plan {
	c := d.Scripts
	name := args[0]
	switch {
	case resp.EqualFold(name, "script"):
		// A script is named by its body's SHA1: learning it before Valkey
		// answers cannot give a SHA1 a verdict that is not its body's (a
		// body Valkey refuses is one no EVALSHA can run).
		if c != nil && len(args) == 3 && resp.EqualFold(args[1], "load") {
			c.Learn(args[2])
		}
		return Plan{}
	case resp.EqualFold(name, "function"):
		if c != nil {
			return learnFunctions(c, args)
		}
		return Plan{}
	}
	if len(args) < 3 {
		return Plan{}
	}
	n, ok := numkeys(args[2], len(args)-3)
	if !ok {
		return Plan{} // Valkey answers the error
	}
	skeys, sargs := args[3:3+n], args[3+n:]
	if !resp.EqualFold(name, "eval_ro") && !resp.EqualFold(name, "evalsha_ro") && !resp.EqualFold(name, "fcall_ro") {
		for _, k := range skeys {
			if d.own(k) {
				// A script may write any key it is given: lockproxy's
				// own are for its own scripts (reads: the _RO forms).
				return d.refuseOwn(upper(name), k)
			}
		}
	}
	lock := false
	for _, k := range skeys {
		if d.Rules.Match(k) != nil {
			lock = true
			break
		}
	}
	var rep *scriptcheck.Report
	var cmd string
	var body scriptBody
	switch {
	case resp.EqualFold(name, "evalsha"):
		sha := ""
		if c != nil {
			if e := c.Lookup(args[1]); e != nil {
				body.s, sha = e.Body(), e.Report().SHA
			}
		}
		if body.s == "" {
			// A script lockproxy has not seen cannot run under its
			// monitor: NOSCRIPT, so that clients that fall back to EVAL
			// (go-redis, redis-py, ioredis, ...) send its body.
			return d.unseenSHA(args[1])
		}
		return d.monitorScript("EVALSHA", body, sha, skeys, sargs, s)
	case resp.EqualFold(name, "eval"):
		body.b = args[1]
		sha := ""
		if c != nil {
			sha = c.Learn(args[1]).Report().SHA
		} else {
			sha = scriptcheck.Analyze(string(args[1])).SHA
		}
		return d.monitorScript("EVAL", body, sha, skeys, sargs, s)
	case resp.EqualFold(name, "fcall"):
		cmd = "FCALL"
		if c != nil {
			rep = c.Function(args[1])
		}
		if rep == nil {
			if !lock {
				return Plan{}
			}
			return d.unseenScript("FCALL", args[1], true, skeys, s)
		}
	case resp.EqualFold(name, "eval_ro"):
		if c != nil {
			c.Learn(args[1])
		}
		return Plan{}
	default: // EVALSHA_RO, FCALL_RO: Valkey refuses their writes
		return Plan{}
	}
	if !lock && !rep.Named() && len(rep.Flushes) == 0 && rep.Anywhere() == nil && !d.writesGuarded(rep, skeys) {
		return Plan{}
	}
	return d.judgeScript(cmd, body, rep, skeys, sargs, s)
}

// monitorScript runs an EVAL or EVALSHA under the monitor, but for the
// scripts that need none: flags=no-writes (Valkey refuses their writes),
// and those that cannot reach Valkey at all (unmonitored).
func (d *Decider) monitorScript(cmd string, body scriptBody, sha string, keys, argv [][]byte, s Session) Plan {
	if noWrites(body) || unmonitored(body) {
		return Plan{}
	}
	return d.monitorPlan(cmd, body, sha, keys, argv, s)
}

// unseenSHA: an EVALSHA of a script lockproxy has not seen loaded.
func (d *Decider) unseenSHA(sha []byte) Plan {
	// Valkey's own answer for a script it does not know, not a refusal
	// of lockproxy's: no effect to record.
	return Plan{Kind: Refuse, Err: errUnseenSHA(sha)}
}

// learnFunctions: FUNCTION LOAD [REPLACE] body, FUNCTION DELETE lib,
// FUNCTION FLUSH, FUNCTION RESTORE payload [policy]: proposed now, learned
// when Valkey's reply says it took them (see scriptcheck.FunctionChange).
func learnFunctions(c *scriptcheck.Cache, args [][]byte) Plan {
	if len(args) < 2 {
		return Plan{}
	}
	var ch *scriptcheck.FunctionChange
	switch {
	case resp.EqualFold(args[1], "load") && len(args) >= 3:
		ch = c.ProposeLoad(args[len(args)-1])
	case resp.EqualFold(args[1], "delete") && len(args) == 3:
		ch = c.ProposeDelete(args[2])
	case resp.EqualFold(args[1], "flush"):
		ch = c.ProposeFlush()
	case resp.EqualFold(args[1], "restore") && len(args) >= 3:
		policy := ""
		if len(args) >= 4 {
			policy = string(args[3])
		}
		ch = c.ProposeRestore(args[2], policy)
	default:
		return Plan{}
	}
	return Plan{Learn: func(accepted bool) { c.Settle(ch, accepted) }}
}

// numkeys parses EVAL's numkeys against the arguments that follow it.
func numkeys(b []byte, rest int) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= rest
}

// addScriptLock adds a lock key's verdict, keeping the worst per key.
func addScriptLock(locks []scriptLock, key []byte, r *policy.Rule, v scriptcheck.Verdict, site *scriptcheck.Site) []scriptLock {
	for i := range locks {
		if bytes.Equal(locks[i].key, key) {
			if v.Worse(locks[i].v) {
				locks[i].v, locks[i].site = v, site
			}
			return locks
		}
	}
	return append(locks, scriptLock{key: key, rule: r, v: v, site: site})
}

// scriptLock is one lock key a script touches, with the worst verdict the
// script earns on it.
type scriptLock struct {
	key  []byte
	rule *policy.Rule
	v    scriptcheck.Verdict
	site *scriptcheck.Site
}

// writesGuarded reports whether the script may write a key it receives
// that a lock guards.
func (d *Decider) writesGuarded(rep *scriptcheck.Report, keys [][]byte) bool {
	if !d.Rules.Fenced() {
		return false
	}
	for i, k := range keys {
		if rep.Writes(i+1) && guarded(d.Rules, k) {
			return true
		}
	}
	return false
}

// scriptWrites lists the keys, not lock keys, that the script may write:
// those of KEYS some call may change, and the names its calls build.
func (d *Decider) scriptWrites(rep *scriptcheck.Report, keys, argv [][]byte) []touch {
	var out []touch
	for i, k := range keys {
		if rep.Writes(i+1) && d.Rules.Match(k) == nil {
			out = append(out, touch{key: k, flags: keyspec.KeyRW})
		}
	}
	if rep.Named() {
		var names [][]byte
		for j := range rep.Sites {
			if site := &rep.Sites[j]; site.Target.Named() {
				for _, n := range site.Target.Names(keys, argv, names[:0]) {
					if d.Rules.Match(n) == nil {
						out = append(out, touch{key: bytes.Clone(n), flags: keyspec.KeyRW})
					}
				}
			}
		}
	}
	return out
}

// noWrites reports whether a script declares flags=no-writes on its
// "#!lua" line: Valkey runs it read-only (and would refuse the wrapper's
// own writes).
func noWrites(body scriptBody) bool {
	var line string
	switch {
	case body.b != nil:
		if !bytes.HasPrefix(body.b, []byte("#!")) {
			return false
		}
		l, _, _ := bytes.Cut(body.b, []byte("\n"))
		line = string(l)
	case strings.HasPrefix(body.s, "#!"):
		line, _, _ = strings.Cut(body.s, "\n")
	default:
		return false
	}
	for _, f := range strings.Fields(line) {
		if flags, ok := strings.CutPrefix(f, "flags="); ok {
			for _, fl := range strings.Split(flags, ",") {
				if fl == "no-writes" {
					return true
				}
			}
		}
	}
	return false
}

// scriptBody is a script's text: the EVAL's argument, or the cache's copy
// (converted to a string only when a wrapper is made of it).
type scriptBody struct {
	s string
	b []byte
}

func (sb scriptBody) String() string {
	if sb.b != nil {
		return string(sb.b)
	}
	return sb.s
}

func (d *Decider) judgeScript(cmd string, body scriptBody, rep *scriptcheck.Report, keys, argv [][]byte, s Session) Plan {
	var buf [4]scriptLock
	locks := buf[:0]
	for i, k := range keys {
		if r := d.Rules.Match(k); r != nil {
			v, site := rep.Key(i + 1)
			locks = addScriptLock(locks, k, r, v, site)
		}
	}
	if rep.Named() {
		var names [][]byte
		for j := range rep.Sites {
			site := &rep.Sites[j]
			if !site.Target.Named() {
				continue
			}
			names = site.Target.Names(keys, argv, names[:0])
			for _, name := range names {
				if r := d.Rules.Match(name); r != nil {
					locks = addScriptLock(locks, name, r, site.Verdict, site)
				}
			}
		}
	}
	if p, refused := d.scriptFlush(cmd, rep); refused {
		return p
	}
	if site := rep.Anywhere(); site != nil {
		// A key the analysis cannot name may be a lock of any rule: the
		// strictest rule decides.
		all := d.Rules.All()
		for i := range all {
			l := scriptLock{rule: &all[i], v: site.Verdict, site: site}
			if scriptRefuses(l) {
				reason := errScriptAnywhere(cmd, rep, l)
				e := Effect{Kind: Refused, Command: cmd, Rule: l.rule, Owner: s.Owner(l.rule), Reason: reason}
				return Plan{Kind: Refuse, Err: reason, Effects: []Effect{e}}
			}
		}
		if len(locks) == 0 && len(all) > 0 {
			l := scriptLock{rule: &all[0], v: site.Verdict, site: site}
			locks = append(locks, l)
		}
	}
	var effects []Effect
	if len(rep.Flushes) > 0 && rep.Flushes[0].Verdict == scriptcheck.Blind {
		effects = append(effects, Effect{Kind: Flushed, Command: cmd})
	}
	for _, l := range locks {
		if l.v != scriptcheck.Blind && l.v != scriptcheck.Unknown {
			continue // guarded, acquire: forwarded unchanged
		}
		refuse := scriptRefuses(l)
		owner := s.Owner(l.rule)
		e := Effect{Command: cmd, Key: clone(l.key), Rule: l.rule, Owner: owner}
		if refuse {
			e.Kind = Refused
			e.Reason = errScript(cmd, rep, l)
			return Plan{Kind: Refuse, Err: e.Reason, Effects: []Effect{e}}
		}
		e.Kind, e.Reason = Observed, observedScript(rep, l)
		effects = append(effects, e)
	}
	var fc *fenceCheck
	if d.Rules.Fenced() {
		fc = d.fenceChecks(cmd, d.scriptWrites(rep, keys, argv), s, nil)
	}
	if noWrites(body) || rep.Err != "" {
		// no-writes: Valkey refuses its writes, nothing to fence or
		// record. A script the analysis gave up on is unknown, judged by
		// scripts: above; it is not wrapped either, as a body that does
		// not parse would fail differently inside the wrapper.
		return Plan{Effects: effects}
	}
	nobody := cmd == "FCALL" || (body.s == "" && body.b == nil)
	if fc != nil && nobody {
		// A function's code lives in its library: there is no body to
		// put behind the check.
		reason := errFencedFunction(cmd, rep, fc.effects[0].Key, fc.effects[0].Rule)
		e := Effect{Kind: Refused, Command: cmd, Key: fc.effects[0].Key, Rule: fc.effects[0].Rule, Owner: fc.effects[0].Owner, Reason: reason}
		return Plan{Kind: Refuse, Err: reason, Effects: []Effect{e}}
	}
	p, refused := d.functionAcquires(cmd, rep, keys, s)
	if refused {
		return p
	}
	return Plan{Effects: append(effects, p.Effects...)}
}

// functionAcquires: an FCALL of a function that may take a lock (guarded
// or acquire, creating the key) of a rule with a fence section. lockproxy
// mints a grant and writes the owner record only around a body it can
// wrap (EVAL, EVALSHA): a lock a function took would have no grant, so
// the previous holder's token would stay current and that holder's stale
// writes would pass the fence. Refused, unless the rule says scripts:
// observe (then forwarded and recorded). Under a rule without a fence the
// function is forwarded: its lock is held without an owner record, like
// one taken before lockproxy was in place.
func (d *Decider) functionAcquires(cmd string, rep *scriptcheck.Report, keys [][]byte, s Session) (Plan, bool) {
	var effects []Effect
	for i, k := range keys {
		r := d.Rules.Match(k)
		if r == nil || r.Fencing == nil || !rep.Creates(i+1) {
			continue
		}
		if v, _ := rep.Key(i + 1); v != scriptcheck.Guarded && v != scriptcheck.Acquire {
			continue // blind or unknown: judged above
		}
		e := Effect{Command: cmd, Key: clone(k), Rule: r, Owner: s.Owner(r)}
		if r.Scripts == policy.ScriptsObserve {
			e.Kind, e.Reason = Observed, "function may take the lock without a grant (scripts: observe)"
			effects = append(effects, e)
			continue
		}
		e.Kind, e.Reason = Refused, errFunctionAcquires(cmd, rep, k, r)
		return Plan{Kind: Refuse, Err: e.Reason, Effects: []Effect{e}}, true
	}
	return Plan{Effects: effects}, false
}

// scriptRefuses reports whether a rule refuses a blind or unknown
// function: under scripts: reject, and by default unless the rule's
// release mode is observe.
func scriptRefuses(l scriptLock) bool {
	switch l.v {
	case scriptcheck.Blind:
		switch l.rule.Scripts {
		case policy.ScriptsReject:
			return true
		case policy.ScriptsObserve:
			return false
		}
		return l.rule.Release != policy.ReleaseObserve
	case scriptcheck.Unknown:
		// Only FCALL is judged here (EVAL and EVALSHA run monitored): a
		// function the analysis cannot read would run unchecked, so it is
		// refused unless the rule says scripts: observe, or release:
		// observe (safety by default, issue 26).
		switch l.rule.Scripts {
		case policy.ScriptsReject:
			return true
		case policy.ScriptsObserve:
			return false
		}
		return l.rule.Release != policy.ReleaseObserve
	}
	return false
}

// scriptFlush: a script that calls FLUSHALL, FLUSHDB or SWAPDB (or a
// command whose name is not a literal, which may be one) follows on_flush,
// as the command sent on its own does.
func (d *Decider) scriptFlush(cmd string, rep *scriptcheck.Report) (Plan, bool) {
	if len(rep.Flushes) == 0 || d.OnFlush != policy.FlushReject {
		return Plan{}, false
	}
	reason := errScriptFlush(cmd, rep, &rep.Flushes[0])
	return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: cmd, Reason: reason}}}, true
}

// unseenScript: EVALSHA of a SHA1, or FCALL of a function, that lockproxy
// has not seen loaded.
func (d *Decider) unseenScript(cmd string, id []byte, fn bool, keys [][]byte, s Session) Plan {
	var effects []Effect
	for _, k := range keys {
		r := d.Rules.Match(k)
		if r == nil || r.UnknownSHA == policy.UnknownSHAAllow {
			continue
		}
		owner := s.Owner(r)
		e := Effect{Command: cmd, Key: clone(k), Rule: r, Owner: owner}
		if r.UnknownSHA == policy.UnknownSHAReject {
			e.Kind = Refused
			e.Reason = errUnseenScript(cmd, string(id), fn, k, r)
			return Plan{Kind: Refuse, Err: e.Reason, Effects: []Effect{e}}
		}
		e.Kind, e.Reason = Observed, "unseen "+scriptName(string(id), fn)
		effects = append(effects, e)
	}
	return Plan{Effects: effects}
}

func isScriptAdmin(name []byte) bool {
	return resp.EqualFold(name, "script") || resp.EqualFold(name, "function")
}
