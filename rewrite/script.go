package rewrite

import (
	"bytes"
	"github.com/lockproxy/lockproxy/resp"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// script decides EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, and
// learns script bodies from SCRIPT LOAD and FUNCTION LOAD passing through.
//
// Each lock key the script receives (and each lock key it names itself
// from ARGV, KEYS and constants) gets the verdict of the script's analysis
// (package scriptcheck), made once per distinct script and cached by SHA1
// in d.Scripts:
//
//   - guarded and acquire scripts are forwarded unchanged;
//   - blind ones are refused (BLINDSCRIPT) under the rule's `scripts:
//     reject`, observed under `scripts: observe`; by default refused, or
//     observed when the rule's release mode is observe;
//   - unknown ones are refused (UNCHECKEDSCRIPT) under `scripts: reject`,
//     observed otherwise.
//
// An EVALSHA of a script lockproxy has not seen, or an FCALL of a function
// whose library it has not seen, follows the rule's unknown_sha: allow
// (the default) forwards it, observe forwards and records it, reject
// refuses it. Nothing is fetched from Valkey behind the client's back. The
// refusal of an unseen EVALSHA is a NOSCRIPT error, so that clients which
// fall back to EVAL on NOSCRIPT (go-redis, redis-py, ioredis, ...) resend
// the body and have it checked.
//
// The _RO variants only learn: Valkey refuses writes from them.
//
// Without lock keys among KEYS the cost is a map lookup (of the SHA1 for
// EVALSHA, of the body for EVAL) plus, once per distinct script, its
// analysis, which tells whether it names keys itself.
func (d *Decider) script(args [][]byte, keys []keyspec.Key, s Session) Plan {
	c := d.Scripts
	name := args[0]
	switch {
	case resp.EqualFold(name, "script"):
		if c != nil && len(args) == 3 && resp.EqualFold(args[1], "load") {
			c.Learn(args[2])
		}
		return Plan{}
	case resp.EqualFold(name, "function"):
		if c != nil {
			learnFunctions(c, args)
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
	switch {
	case resp.EqualFold(name, "evalsha"):
		cmd = "EVALSHA"
		if c != nil {
			if e := c.Lookup(args[1]); e != nil {
				rep = e.Report()
			}
		}
		if rep == nil {
			if !lock {
				return Plan{}
			}
			return d.unseenScript("EVALSHA", args[1], false, skeys, s)
		}
	case resp.EqualFold(name, "eval"):
		cmd = "EVAL"
		if c != nil {
			rep = c.Learn(args[1]).Report()
		} else {
			rep = scriptcheck.Analyze(string(args[1]))
		}
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
	if !lock && !rep.Named() {
		return Plan{}
	}
	return d.judgeScript(cmd, rep, skeys, sargs, s)
}

// learnFunctions: FUNCTION LOAD [REPLACE] body, FUNCTION DELETE lib,
// FUNCTION FLUSH.
func learnFunctions(c *scriptcheck.Cache, args [][]byte) {
	if len(args) < 2 {
		return
	}
	switch {
	case resp.EqualFold(args[1], "load") && len(args) >= 3:
		replace := false
		for _, a := range args[2 : len(args)-1] {
			replace = replace || resp.EqualFold(a, "replace")
		}
		c.LoadLibrary(args[len(args)-1], replace)
	case resp.EqualFold(args[1], "delete") && len(args) == 3:
		c.DeleteLibrary(args[2])
	case resp.EqualFold(args[1], "flush"):
		c.FlushFunctions()
	}
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

func (d *Decider) judgeScript(cmd string, rep *scriptcheck.Report, keys, argv [][]byte, s Session) Plan {
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
	var effects []Effect
	for _, l := range locks {
		refuse := false
		switch l.v {
		case scriptcheck.Blind:
			switch l.rule.Scripts {
			case policy.ScriptsReject:
				refuse = true
			case policy.ScriptsObserve:
			default:
				refuse = l.rule.Release != policy.ReleaseObserve
			}
		case scriptcheck.Unknown:
			refuse = l.rule.Scripts == policy.ScriptsReject
		default:
			continue // guarded, acquire: forwarded unchanged
		}
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
	return Plan{Effects: effects}
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
