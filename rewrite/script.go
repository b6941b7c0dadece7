package rewrite

import (
	"bytes"
	"strings"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// script decides EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, and
// learns script bodies from SCRIPT LOAD passing through.
//
// EVAL and EVALSHA run under lockproxy's monitor (monitor.go): every call
// the script makes is checked when it runs, whatever its text. Only
// scripts that cannot reach Valkey, flags=no-writes ones and bodies that
// cannot compile are forwarded as they came (monitorScript). An EVALSHA
// of a script lockproxy has not seen is answered NOSCRIPT, so that
// clients which fall back to EVAL on NOSCRIPT (go-redis, redis-py,
// ioredis, ...) send its body. Bodies are cached by SHA1 in d.Scripts.
//
// FCALL runs the function's monitored registration, under the monitor
// inside its library (monitor_lib.go); a library loaded around lockproxy
// has none, and Valkey answers that it has no such function.
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
		if len(args) == 3 && resp.EqualFold(args[1], "debug") && (resp.EqualFold(cstr(args[2]), "yes") || resp.EqualFold(cstr(args[2]), "sync")) {
			// Valkey's Lua debugger runs whatever commands and Lua its
			// client types, unmonitored, and its flag would stay on an
			// upstream connection other clients' scripts share. (Valkey
			// reads the mode as a C string: "YES\x00x" is YES.)
			reason := errScriptDebug
			return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: "SCRIPT", Reason: reason}}}
		}
		if c != nil && len(args) >= 2 && len(args) <= 3 && resp.EqualFold(args[1], "flush") {
			// Valkey forgets every script (SYNC or ASYNC alike): so does
			// lockproxy, once Valkey has accepted it, so that an EVALSHA
			// of one is answered NOSCRIPT, as Valkey answers it.
			return Plan{Learn: func(accepted bool) {
				if accepted {
					c.Flush()
				}
			}}
		}
		return Plan{}
	case resp.EqualFold(name, "function"):
		// FUNCTION LOAD is sent with the monitor inside the library
		// (Library, before the command is decided).
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
		return d.monitorScript(name, "EVALSHA", body, sha, skeys, sargs, s)
	case resp.EqualFold(name, "eval"):
		body.b = args[1]
		sha := ""
		if c != nil {
			sha = c.Learn(args[1]).Report().SHA
		} else {
			sha = scriptcheck.Analyze(string(args[1])).SHA
		}
		return d.monitorScript(name, "EVAL", body, sha, skeys, sargs, s)
	case resp.EqualFold(name, "fcall"):
		return d.fcallPlan(name, args[1], skeys, sargs, s)
	case resp.EqualFold(name, "eval_ro"):
		sha := ""
		if c != nil {
			sha = c.Learn(args[1]).Report().SHA
		} else if d.Gate {
			sha = scriptcheck.Analyze(string(args[1])).SHA
		}
		return d.gateOnlyPlan(name, scriptBody{b: args[1]}, sha, skeys, sargs, s, true)
	case resp.EqualFold(name, "evalsha_ro"):
		// Valkey may hold a script lockproxy ran under its monitor only
		// as the monitored text, under another SHA1: a body lockproxy
		// knows goes as EVAL_RO of itself, which answers as Valkey's
		// EVALSHA_RO of the client's script would (Valkey refuses its
		// writes). One it does not know goes as it came: Valkey answers.
		if c != nil {
			if e := c.Lookup(args[1]); e != nil && e.Body() != "" {
				if p := d.gateOnlyPlan(name, scriptBody{s: e.Body()}, e.SHA, skeys, sargs, s, true); p.Kind == Run {
					return p // under the gate (gate.go)
				}
				sc := &Script{Name: "read-only " + e.SHA, Body: e.Body(), SHA: e.SHA, Client: e.SHA, RO: true}
				return Plan{Kind: Run, Script: sc, Keys: skeys, Args: sargs, Shape: ScriptReply, Verb: name}
			}
		}
		return Plan{}
	}
	// FCALL_RO (of a monitored library: its function's
	// own name, a direct call; of another, as it came): Valkey refuses
	// their writes.
	return Plan{}
}

// monitorScript runs an EVAL or EVALSHA under the monitor, but for the
// scripts that need none: flags=no-writes (Valkey refuses their writes),
// and those that cannot reach Valkey at all (unmonitored); and for a lock
// library's known text, which runs lockproxy's equivalent of it (known.go).
// verb is the client's spelling of the command, which the monitored call
// keeps (MONITOR shows it).
func (d *Decider) monitorScript(verb []byte, cmd string, body scriptBody, sha string, keys, argv [][]byte, s Session) Plan {
	if noWrites(body) || unmonitored(body) {
		return d.gateOnlyPlan(verb, body, sha, keys, argv, s, false)
	}
	if p, ok := d.knownPlan(verb, sha, keys, argv, s); ok {
		return p // a lock library's known text (known.go)
	}
	p := d.monitorPlan(cmd, body, sha, keys, argv, s)
	p.Verb = verb
	return p
}

// unseenSHA: an EVALSHA of a script lockproxy has not seen loaded.
func (d *Decider) unseenSHA(sha []byte) Plan {
	// Valkey's own answer for a script it does not know, not a refusal
	// of lockproxy's: no effect to record.
	return Plan{Kind: Refuse, Err: errUnseenSHA(sha)}
}

// numkeys parses EVAL's numkeys against the arguments that follow it, as
// Valkey reads an integer: no sign, no leading zero ("01" is Valkey's
// error, which a call re-sent with numkeys "1" would not be).
func numkeys(b []byte, rest int) (int, bool) {
	if len(b) == 0 || len(b) > 9 || len(b) > 1 && b[0] == '0' {
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

func isScriptAdmin(name []byte) bool {
	return resp.EqualFold(name, "script") || resp.EqualFold(name, "function")
}
