package rewrite

import (
	"fmt"
	"strconv"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// The errors a client gets for a script, next to those in errors.go. One
// code word, then what happened (script, line, key, rule) and what to do:
//
//	BLINDSCRIPT      a script that deletes, expires or overwrites a lock key
//	                 without first comparing the key's value with a token
//	UNCHECKEDSCRIPT  a script whose effect on a lock key lockproxy cannot
//	                 tell, under `scripts: reject`; or an FCALL of a function
//	                 whose library lockproxy has not seen, under
//	                 `unknown_sha: reject`
//	LOCKED           a script that calls FLUSHALL, FLUSHDB or SWAPDB (or
//	                 a command named at run time), under on_flush: reject
//	NOSCRIPT         an EVALSHA of a script lockproxy has not seen, under
//	                 `unknown_sha: reject`: clients that fall back to EVAL on
//	                 NOSCRIPT then send the body, which gets checked

// canonicalRenewal is the token-checked lease change refusals point to.
const canonicalRenewal = `if redis.call('GET',KEYS[1])==ARGV[1] then return redis.call('PEXPIRE',KEYS[1],ARGV[2]) else return 0 end`

func scriptName(id string, fn bool) string {
	if fn {
		return "function " + strconv.Quote(id)
	}
	return "script " + id
}

func reportName(rep *scriptcheck.Report) string {
	if rep.Function != "" {
		return fmt.Sprintf("function %q (library %q)", rep.Function, rep.Library)
	}
	return "script " + rep.SHA
}

// where is "line N" and what the call is, for messages.
func where(site *scriptcheck.Site) string {
	if site == nil {
		return "the script"
	}
	s := "line " + strconv.Itoa(site.Line)
	if site.Command != "" {
		s += " (" + site.Command + ")"
	}
	return s
}

func errScript(cmd string, rep *scriptcheck.Report, l scriptLock) string {
	site := l.site
	if l.v == scriptcheck.Blind {
		verb, advice := "changes", ""
		if site != nil {
			verb = site.Op.Verb()
		}
		switch {
		case site != nil && site.Op == scriptcheck.OpExpire:
			advice = "renew with your token, in the same script: " + canonicalRenewal
		case site != nil && site.Op == scriptcheck.OpOverwrite:
			advice = "acquire with SET key token NX PX ms, and change the lock only after comparing its value with your token in the same script"
		default:
			advice = "compare its value with your token before acting, in the same script: " + canonicalRelease
		}
		return fmt.Sprintf("BLINDSCRIPT lockproxy refused %s of %s: %s %s lock key %s (%s, %s) without first comparing its value with the caller's token, so it can hit a lock another client took after this one's lease ran out; %s",
			cmd, reportName(rep), where(site), verb, quoteKey(l.key), targetName(site), ruleName(l.rule), advice)
	}
	why := ""
	if site != nil && site.Reason != "" {
		why = ": " + site.Reason
	}
	return fmt.Sprintf("UNCHECKEDSCRIPT lockproxy refused %s of %s: it cannot tell whether %s changes lock key %s (%s, %s, scripts: reject) only for the lock's holder%s; pass lock keys in KEYS and name commands literally, check the script with `lockproxy lint`, or set scripts: observe",
		cmd, reportName(rep), where(site), quoteKey(l.key), targetName(site), ruleName(l.rule), why)
}

// errScriptAnywhere: a script that may change a key the analysis cannot
// name, under a rule that refuses unknown scripts.
func errScriptAnywhere(cmd string, rep *scriptcheck.Report, l scriptLock) string {
	why := ""
	if l.site.Reason != "" {
		why = ": " + l.site.Reason
	}
	return fmt.Sprintf("UNCHECKEDSCRIPT lockproxy refused %s of %s: it cannot tell which keys %s changes, so it may change a lock key of %s (scripts: reject) without the lock's holder%s; pass lock keys in KEYS or build their names with .. from KEYS, ARGV and constants, name commands literally, check the script with `lockproxy lint`, or set scripts: observe",
		cmd, reportName(rep), where(l.site), ruleName(l.rule), why)
}

// errFencedFunction: an FCALL of a function that writes a key a lock
// guards: lockproxy fences the writes of EVAL scripts only.
func errFencedFunction(cmd string, rep *scriptcheck.Report, key []byte, r *policy.Rule) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s of %s: it may write %s, a key a lock of %s guards, and lockproxy checks the fencing token of such writes only for scripts sent with EVAL or EVALSHA (it runs them behind the check); send the function's body with EVAL, or write the key with plain commands",
		cmd, reportName(rep), quoteKey(key), ruleName(r))
}

// errFunctionAcquires: an FCALL of a function that may take a lock whose
// rule has a fence (see functionAcquires).
func errFunctionAcquires(cmd string, rep *scriptcheck.Report, key []byte, r *policy.Rule) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s of %s: it may take the lock %s of %s, and lockproxy mints a lock's grant (its fencing token) only when the lock is taken by a command (SET NX) or by a script sent with EVAL or EVALSHA, which it runs with the grant in the same step; without one the previous holder's token would stay current. Take the lock with SET NX or send the function's body with EVAL (or set scripts: observe on the rule to let it through without a grant)",
		cmd, reportName(rep), quoteKey(key), ruleName(r))
}

// errFencedBlocking: a blocking command that writes a guarded key (the
// fence check cannot wait).
func errFencedBlocking(cmd string, key []byte) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s: it writes %s, a key a lock guards, and the fence check that write must pass runs it where it cannot block (it would answer at once instead of waiting); use the command's non-blocking form (LPOP for BLPOP, XREADGROUP without BLOCK, ...) and retry, holding the lock",
		cmd, quoteKey(key))
}

// errScriptFlush: a script that calls FLUSHALL, FLUSHDB or SWAPDB, or may
// (its command name is not a literal), under on_flush: reject.
func errScriptFlush(cmd string, rep *scriptcheck.Report, site *scriptcheck.Site) string {
	return fmt.Sprintf("LOCKED lockproxy refused %s of %s: %s %s, which would delete every lock without checking who holds it (on_flush: reject); delete keys by name, or set on_flush: allow in the lockproxy config",
		cmd, reportName(rep), where(site), flushWhat(site))
}

func flushWhat(site *scriptcheck.Site) string {
	if site.Verdict == scriptcheck.Blind {
		return "calls " + site.Command
	}
	return "calls a command whose name is not a literal, so it may be FLUSHALL, FLUSHDB or SWAPDB"
}

func targetName(site *scriptcheck.Site) string {
	if site == nil || site.Target.Kind == scriptcheck.TargetAny {
		return "a key of the script"
	}
	return site.Target.String()
}

func observedScript(rep *scriptcheck.Report, l scriptLock) string {
	s := l.v.String() + " " + reportName(rep) + ": " + where(l.site)
	if l.site != nil && l.site.Reason != "" {
		s += ": " + l.site.Reason
	}
	return s
}

func errUnseenScript(cmd, id string, fn bool, key []byte, r *policy.Rule) string {
	if fn {
		return fmt.Sprintf("UNCHECKEDSCRIPT lockproxy refused FCALL of function %s on lock key %s (%s, unknown_sha: reject): it has not seen the function's library loaded, so it cannot check what the function does to the lock; load the library with FUNCTION LOAD through lockproxy",
			quoteKey([]byte(id)), quoteKey(key), ruleName(r))
	}
	return fmt.Sprintf("NOSCRIPT lockproxy has not seen script %s, so it cannot check what %s does to lock key %s (%s, unknown_sha: reject); send the script with EVAL or SCRIPT LOAD through lockproxy",
		quoteKey([]byte(id)), cmd, quoteKey(key), ruleName(r))
}

func errUnseenSHA(sha []byte) string {
	return fmt.Sprintf("NOSCRIPT lockproxy has not seen script %s, so it cannot run it under its monitor; send the script with EVAL or SCRIPT LOAD through lockproxy", quoteKey(sha))
}
