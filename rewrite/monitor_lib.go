package rewrite

import (
	"bytes"
	_ "embed"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/resp"
)

// A function library loaded through lockproxy (FUNCTION LOAD [REPLACE])
// while lock rules exist carries lockproxy's monitor inside it, so that
// every function of it is checked when it runs, whichever lockproxy
// instance or client calls it. The library is laid out as a monitored
// script is (monitor.go):
//
//	#!lua name=... (the client's line, kept first: Valkey requires it)
//	local redis, server, _G, getfenv, setfenv, loadstring, load, newproxy,
//	  ARGV, setmetatable = (function() <the library's monitor (monitor_lib.lua,
//	  with monitor.lua's checks and stand-ins)> end)(); <line 2 of the library>
//	<line 3 of the library>
//	...
//
// The library's code is the chunk's own top level, after the monitor's
// statement, on its own lines: nothing it says can close a block of the
// monitor's or run before it (no check of its text is needed), and the
// only names of the monitor's in its scope are the ten locals. Its
// redis is the monitor's, whose register_function registers each
// callback twice, as name (a direct call: it may write no lock, no key a
// fence guards, none of lockproxy's keys) and as name__lockproxy, which
// lockproxy calls for an FCALL sent through it, with a monitored EVAL's
// extra arguments after the client's, then the rules' patterns (so the
// rules in force decide, not those the library was loaded under) and a
// trailer that counts them. An FCALL through lockproxy of a function
// loaded around it (no name__lockproxy) gets Valkey's "Function not
// found", with the fix.

//go:embed monitor_lib.lua
var monitorLibLua string

const (
	// libPrefix opens the library's second line: the monitor's statement
	// and its first words, by which a monitored library is known.
	libPrefix = monitorPrefix + libFirst
	libFirst  = "local __lockproxy_lib = true "
	// fnSuffix names a function's registration lockproxy calls.
	fnSuffix = "__lockproxy"
)

// The core's refusals of a lock, or a guarded key, that the proxy passed
// nothing for: for a direct call, worded as what they are.
var libDirect = strings.NewReplacer(
	`": it is a lock's key and none of the script's KEYS and ARGV; pass the lock's key in KEYS, so that lockproxy can check who holds it"`,
	`direct and ": it is a lock's key, and this function was called without lockproxy (FCALL sent to Valkey directly), so nothing shows who holds the lock; call it through lockproxy" or ": it is a lock's key and none of the script's KEYS and ARGV; pass the lock's key in KEYS, so that lockproxy can check who holds it"`,
	`": a lock's fence guards it and it is none of the script's KEYS and ARGV; pass it in KEYS, so that lockproxy can check the writer's fencing token"`,
	`direct and ": a lock's fence guards it, and this function was called without lockproxy (FCALL sent to Valkey directly), so no fencing token can be checked; call it through lockproxy" or ": a lock's fence guards it and it is none of the script's KEYS and ARGV; pass it in KEYS, so that lockproxy can check the writer's fencing token"`,
)

var libMonitors sync.Map // rules id → library monitor text

// libraryMonitor is the library's monitor for the rules m (the defaults
// of a direct call; lockproxy's calls bring the rules in force).
func libraryMonitor(m *monitorRules) string {
	if t, ok := libMonitors.Load(m.id); ok {
		return t.(string)
	}
	pats := func(ps []string) string {
		q := make([]string, len(ps))
		for i, p := range ps {
			q[i] = luaQuote(p)
		}
		return "{" + strings.Join(q, ", ") + "}"
	}
	// (The suffixes are tried only on a key that holds ":lockproxy:".)
	own := []string{"key == " + luaQuote(EpochKey), "find(key, ':lockproxy:', 1, true) and (find(key, '" + suffixPattern(counterSuffix) + "') or find(key, '" + suffixPattern(recordsSuffix) + "') or find(key, '" + suffixPattern(waitSuffix) + "') or find(key, '" + suffixPattern(indexSuffix) + "') or find(key, '" + suffixPattern(epochSuffix) + "') or key == " + luaQuote(FlushProbeKey) + ")", "pm(key, PO)"}
	core := strings.NewReplacer(
		"@L@", "L",
		"@FA@", "FA",
		"@HOT@", "find(a, ':lockproxy:', 1, true) or a == "+luaQuote(EpochKey)+" or pm(a, PL) or pm(a, PG) or pm(a, PO)",
		"@OWN@", strings.Join(own, " or "),
		"@LOCK@", "pm(key, PL)",
		"@GUARD@", "pm(key, PG)",
		"@FLUSH@", "if FR then\n"+m.flushCheck+"\nelse\n"+m.flushAllow+"\nend",
		"@GATE@", m.gate,
		"@GATEVARS@", m.gateVars,
		"@KS@", m.ks,
		"@FNS@", monitorFns,
		"@FENCE@", fnFence,
		"@MARK@", fnMark,
		"@GRANT@", fnGrant,
		"@DELAYFNS@", fnGrant+fnSlotChanged,
		"@IDX@", fnIndex,
	).Replace(libDirect.Replace(monitorCore))
	t := strings.NewReplacer(
		"@PL@", pats(m.locks),
		"@PG@", pats(m.guards),
		"@PO@", pats(m.owns),
		"@FR@", strconv.FormatBool(m.flushReject),
		"@CORE@", core+monitorSealers,
		"@STANDINS@", monitorStandIns,
	).Replace(luaText(monitorLibLua))
	// One line, as a script's monitor (MonitorBody): the ";" of
	// monitorSuffix ends the statement before the library's first token.
	t = strings.TrimSpace(strings.ReplaceAll(t, "\n", " "))
	// UnwrapLibrary finds the monitor's end at the first monitorSuffix:
	// the rules' patterns cannot hold it (luaLit escapes ")" and "(").
	if !strings.HasPrefix(t, libFirst) || strings.Contains(t, monitorSuffix) {
		panic("rewrite: monitor_lib.lua does not start with its marker line, or holds the monitor's closing words")
	}
	libMonitors.Store(m.id, t)
	return t
}

// MonitorLibrary is the text lockproxy loads for a library's code: ok
// false when it sends the code as it came (no "#!" line, or no line
// after it: Valkey answers its error). Code that already carries the
// monitor gets it anew, for the rules m.
func MonitorLibrary(code string, m *monitorRules) (string, bool) {
	if orig, ok := UnwrapLibrary(code); ok {
		code = orig
	}
	line, rest, found := strings.Cut(code, "\n")
	if !found || !strings.HasPrefix(line, "#!") {
		return "", false
	}
	mon := libraryMonitor(m)
	var b strings.Builder
	b.Grow(len(code) + len(monitorPrefix) + len(mon) + len(monitorSuffix))
	b.WriteString(line)
	b.WriteByte('\n')
	b.WriteString(monitorPrefix)
	b.WriteString(mon)
	b.WriteString(monitorSuffix)
	b.WriteString(rest)
	return b.String(), true
}

// UnwrapLibrary gives back the client's code of a library that carries
// the monitor (ok false for any other text): the monitor ends at the
// first monitorSuffix after libPrefix.
func UnwrapLibrary(text string) (string, bool) {
	line, rest, found := strings.Cut(text, "\n")
	if !found || !strings.HasPrefix(line, "#!") || !strings.HasPrefix(rest, libPrefix) {
		return "", false
	}
	i := strings.Index(rest[len(libPrefix):], monitorSuffix)
	if i < 0 {
		return "", false
	}
	return line + "\n" + rest[len(libPrefix)+i+len(monitorSuffix):], true
}

// Library returns FUNCTION LOAD's arguments with the library's code
// monitored, or nil to send the command as it came: no lock rules, not
// a FUNCTION LOAD or RESTORE, or code the monitor cannot go around. A
// FUNCTION RESTORE gets its payload's libraries monitored
// (function_dump.go); err is the refusal of a payload lockproxy cannot
// read whose checksum is right.
func (d *Decider) Library(args [][]byte) ([][]byte, error) {
	if !d.Active() || len(args) < 3 || !resp.EqualFold(args[0], "function") {
		return nil, nil
	}
	if resp.EqualFold(args[1], "restore") {
		if len(args) > 4 {
			return nil, nil // Valkey answers the syntax error
		}
		return d.restore(args)
	}
	if !resp.EqualFold(args[1], "load") {
		return nil, nil
	}
	// As Valkey's functionLoadCommand: any number of REPLACE words (each
	// compared as a C string), then the code; any other word is its
	// "Unknown option given" error, and nothing is loaded.
	for _, a := range args[2 : len(args)-1] {
		if !resp.EqualFold(cstr(a), "replace") {
			return nil, nil
		}
	}
	text, ok := MonitorLibrary(string(args[len(args)-1]), d.monitorRules())
	if !ok {
		return nil, nil
	}
	out := make([][]byte, len(args))
	copy(out, args)
	out[len(out)-1] = []byte(text)
	return out, nil
}

// restore is Library for FUNCTION RESTORE payload [policy]: each library
// of the payload monitored for the rules in force. A payload whose
// checksum is wrong is rewritten with a wrong one too, so that Valkey
// refuses it in its own words (and a server that skips the check loads
// it monitored); one lockproxy cannot read is never sent: refused when
// its checksum is right, answered with Valkey's own checksum error when
// it is not.
func (d *Decider) restore(args [][]byte) ([][]byte, error) {
	libs, version, sumOK, err := dumpLibraries(args[2])
	if err != nil {
		if sumOK {
			return nil, errors.New(errRestoreUnread)
		}
		if len(args) == 4 && !restorePolicy(args[3]) {
			return nil, nil // Valkey answers the policy's error first
		}
		// Valkey's own answer (unless it skips the checksum check, when
		// it might load what lockproxy cannot monitor: refused either way).
		return nil, errors.New(errRestoreChecksum)
	}
	m := d.monitorRules()
	for i, l := range libs {
		if t, ok := MonitorLibrary(l, m); ok {
			libs[i] = t
		}
	}
	out := make([][]byte, len(args))
	copy(out, args)
	out[2] = dumpPayload(libs, version, !sumOK)
	return out, nil
}

// restorePolicy reports whether p is a policy FUNCTION RESTORE takes.
func restorePolicy(p []byte) bool {
	p = cstr(p)
	return resp.EqualFold(p, "append") || resp.EqualFold(p, "replace") || resp.EqualFold(p, "flush")
}

// fcallPlan runs FCALL of a function as its monitored registration,
// name__lockproxy, with the extra arguments of a monitored EVAL
// (monitorPlan), then the rules' lock, guard and fence-key patterns, then
// the trailer.
func (d *Decider) fcallPlan(verb, name []byte, keys, argv [][]byte, s Session) Plan {
	if len(name) >= len(fnSuffix) && resp.EqualFold(name[len(name)-len(fnSuffix):], fnSuffix) {
		e := errFcallOwnName(name)
		return Plan{Kind: Refuse, Err: e, Effects: []Effect{{Kind: Refused, Command: "FCALL", Reason: e}}}
	}
	sh, sargs, dur := d.monitorArgs("FCALL", keys, argv, s)
	m := d.monitorRules()
	for _, ps := range [3][]string{m.locks, m.guards, m.owns} {
		for _, p := range ps {
			sargs = append(sargs, []byte(p))
		}
	}
	fr := 0
	if m.flushReject {
		fr = 1
	}
	t := make([]byte, 0, 48)
	t = append(t, "lockproxy-fcall"...)
	for _, n := range [...]int{sh.Locks, sh.FenceArgs, sh.FenceKeys, len(m.locks), len(m.guards), len(m.owns), fr} {
		t = append(t, ' ')
		t = strconv.AppendInt(t, int64(n), 10)
	}
	sargs = append(sargs, t)
	fn := string(name)
	sc := &Script{Name: "function " + fn, Body: fn + fnSuffix, SHA: fn + fnSuffix, Fn: fn, Verb: string(verb)}
	return Plan{Kind: Run, Script: sc, Keys: keys, Args: sargs, Shape: ScriptReply, Clue: monitorClue(sh, argv),
		Durable: dur.d, DurableLocks: dur.locks}
}

// errFunctionNotFound is Valkey's reply when FCALL names no function; for
// a function__lockproxy it also means a library loaded around lockproxy.
const errFunctionNotFound = "-ERR Function not found\r\n"

// unwrapFcall gives an FCALL's error reply the function's own name, and
// says what a missing monitored registration means.
func (sc *Script) unwrapFcall(reply []byte) []byte {
	if len(reply) == 0 || reply[0] != '-' {
		return reply
	}
	if string(reply) == errFunctionNotFound {
		return resp.AppendError(nil, errFcallUnmonitored(sc.Fn))
	}
	// The name as registered, which FCALL matches in any letter case.
	var out []byte
	for i := 0; ; {
		j := bytes.Index(reply[i:], []byte(fnSuffix))
		if j < 0 {
			return append(out, reply[i:]...)
		}
		j += i
		if j-i >= len(sc.Fn) && bytes.EqualFold(reply[j-len(sc.Fn):j], []byte(sc.Fn)) {
			out = append(out, reply[i:j]...)
		} else {
			out = append(out, reply[i:j+len(fnSuffix)]...)
		}
		i = j + len(fnSuffix)
	}
}

// FunctionList gives FUNCTION LIST's reply as the client's libraries: a
// monitored library's name__lockproxy registrations left out (only where
// the library has the function's own name too) and its code
// (library_code, WITHCODE) the client's. Any other reply passes.
func FunctionList(reply []byte) []byte {
	if !bytes.Contains(reply, []byte(fnSuffix)) {
		return reply
	}
	v, n, err := resp.Parse(reply)
	if err != nil || n != len(reply) || v.Type != '*' {
		return reply
	}
	for i := range v.Elems {
		lib := &v.Elems[i]
		for j := 0; j+1 < len(lib.Elems); j += 2 {
			val := &lib.Elems[j+1]
			switch string(lib.Elems[j].Str) {
			case "functions":
				names := map[string]bool{}
				for _, f := range val.Elems {
					names[strings.ToLower(string(field(f, "name")))] = true
				}
				keep := val.Elems[:0]
				for _, f := range val.Elems {
					name := strings.ToLower(string(field(f, "name")))
					if base, ok := strings.CutSuffix(name, fnSuffix); ok && names[base] {
						continue
					}
					keep = append(keep, f)
				}
				val.Elems = keep
			case "library_code":
				if orig, ok := UnwrapLibrary(string(val.Str)); ok {
					val.Str = []byte(orig)
				}
			}
		}
	}
	return resp.AppendValue(nil, v)
}

// field is a map's (or RESP2 pair list's) value for key.
func field(m resp.Value, key string) []byte {
	for j := 0; j+1 < len(m.Elems); j += 2 {
		if string(m.Elems[j].Str) == key {
			return m.Elems[j+1].Str
		}
	}
	return nil
}

// FunctionStats gives FUNCTION STATS's reply the client's view of a
// running function: its own name, and the command as the client sent it
// (lockproxy's extra arguments, counted by the trailer, left out). The
// engines' function counts stay Valkey's (each monitored function is
// registered twice; FunctionStatsCounted counts them as the client's).
// Any other reply passes.
func FunctionStats(reply []byte) []byte {
	if !bytes.Contains(reply, []byte(fnSuffix)) {
		return reply
	}
	v, n, err := resp.Parse(reply)
	if err != nil || n != len(reply) || (v.Type != '*' && v.Type != '%') {
		return reply
	}
	for j := 0; j+1 < len(v.Elems); j += 2 {
		if string(v.Elems[j].Str) != "running_script" {
			continue
		}
		rs := &v.Elems[j+1]
		for k := 0; k+1 < len(rs.Elems); k += 2 {
			val := &rs.Elems[k+1]
			switch string(rs.Elems[k].Str) {
			case "name":
				val.Str = trimFnSuffix(val.Str)
			case "command":
				val.Elems = clientFcall(val.Elems)
			}
		}
	}
	return resp.AppendValue(nil, v)
}

// FunctionStatsCounted is FunctionStats with the Lua engine's
// functions_count the client's: the functions FUNCTION LIST (list, its
// reply just before) shows once a monitored library's name__lockproxy
// registrations are left out, as FunctionList leaves them out. Without a
// list it can read, the count stays Valkey's.
func FunctionStatsCounted(reply, list []byte) []byte {
	reply = FunctionStats(reply)
	if !bytes.Contains(list, []byte(fnSuffix)) {
		return reply
	}
	lv, n, err := resp.Parse(list)
	if err != nil || n != len(list) || lv.Type != '*' {
		return reply
	}
	count := int64(0)
	for _, lib := range lv.Elems {
		for j := 0; j+1 < len(lib.Elems); j += 2 {
			if string(lib.Elems[j].Str) != "functions" {
				continue
			}
			names := map[string]bool{}
			for _, f := range lib.Elems[j+1].Elems {
				names[strings.ToLower(string(field(f, "name")))] = true
			}
			for _, f := range lib.Elems[j+1].Elems {
				name := strings.ToLower(string(field(f, "name")))
				if base, ok := strings.CutSuffix(name, fnSuffix); ok && names[base] {
					continue
				}
				count++
			}
		}
	}
	v, n, err := resp.Parse(reply)
	if err != nil || n != len(reply) || (v.Type != '*' && v.Type != '%') {
		return reply
	}
	for j := 0; j+1 < len(v.Elems); j += 2 {
		if string(v.Elems[j].Str) != "engines" {
			continue
		}
		engines := v.Elems[j+1].Elems
		for k := 0; k+1 < len(engines); k += 2 {
			if !resp.EqualFold(engines[k].Str, "lua") {
				continue
			}
			st := engines[k+1].Elems
			for x := 0; x+1 < len(st); x += 2 {
				if string(st[x].Str) == "functions_count" && st[x+1].Type == ':' {
					st[x+1].Int = count
				}
			}
		}
	}
	return resp.AppendValue(nil, v)
}

func trimFnSuffix(b []byte) []byte {
	if len(b) > len(fnSuffix) && resp.EqualFold(b[len(b)-len(fnSuffix):], fnSuffix) {
		return b[:len(b)-len(fnSuffix)]
	}
	return b
}

// clientFcall is an FCALL's arguments as the client sent them, from the
// monitored call's: the function's own name, and without lockproxy's
// extra arguments, which the trailer counts.
func clientFcall(cmd []resp.Value) []resp.Value {
	if len(cmd) < 4 {
		return cmd
	}
	f := strings.Fields(string(cmd[len(cmd)-1].Str))
	if len(f) != 8 || f[0] != "lockproxy-fcall" {
		return cmd
	}
	extra := 1 + 3
	for i, x := range f[1:] {
		c, err := strconv.Atoi(x)
		if err != nil || c < 0 {
			return cmd
		}
		switch i {
		case 0:
			extra += 6 * c
		case 6: // the flush mode
		default:
			extra += c
		}
	}
	if extra > len(cmd)-3 {
		return cmd
	}
	cmd[1].Str = trimFnSuffix(cmd[1].Str)
	return cmd[:len(cmd)-extra]
}

// FunctionLoadReply gives a FUNCTION LOAD's or RESTORE's error the
// function's own name where Valkey named its monitored registration (a
// name collision: either may be found first).
func FunctionLoadReply(reply []byte) []byte {
	if len(reply) == 0 || reply[0] != '-' || !bytes.Contains(reply, []byte(fnSuffix+" already exists")) {
		return reply
	}
	return bytes.ReplaceAll(reply, []byte(fnSuffix+" already exists"), []byte(" already exists"))
}
