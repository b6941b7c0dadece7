package rewrite

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/commands"
)

// The gate inside the monitor: a script's or function's call of a command
// that reconfigures Valkey (commands.Table.Gated: CONFIG SET, ACL SETUSER,
// CLUSTER DELSLOTS, ...) is refused (NOADMIN) before anything else is
// looked at, hot or not. The monitor's list is generated from the command
// table the proxy gates plain commands with (GatedList), so the two never
// disagree. A script run for a session that may reconfigure Valkey
// (GateSession) gets a monitor without the gate; a library's monitor,
// which a client may call around lockproxy, always has it while the
// deployment gates.

// GateSession is what a Session implements when the gate may be open to
// it: MayReconfigure reports whether its client may run the commands that
// reconfigure Valkey (admin_commands: forward, or an admin logged in under
// admin). A Session without it never may.
type GateSession interface {
	MayReconfigure() bool
}

func mayReconfigure(s Session) bool {
	g, ok := s.(GateSession)
	return ok && g.MayReconfigure()
}

// gateTable is the command table whose gated list the monitor refuses, or
// nil when the deployment does not gate (admin_commands: forward).
func (d *Decider) gateTable() *commands.Table {
	if !d.Gate {
		return nil
	}
	if d.Commands != nil {
		return d.Commands
	}
	return commands.Fallback
}

// gateMaxLen is the longest command name the Lua gate looks up: a longer
// call's verb is no gated command, and is not lower-cased.
func gateMaxLen(list []string) int {
	n := 0
	for _, g := range list {
		name, _, _ := strings.Cut(g, "|")
		name, _, _ = strings.Cut(name, " ")
		if len(name) > n {
			n = len(name)
		}
	}
	return n
}

// gateLua is the monitor's gate (monitor.lua's @GATE@, in run, and
// @GATEVARS@, before it) for a gated list, "" and "" for none. GC holds
// the names with a gated entry (a whole command or some of its
// subcommands); GW those gated whole; GS the gated subcommands as
// "container|sub", and "container|sub+word" for one gated with a word
// after it (ACL LOG RESET). GV remembers, per verb string, what the name
// check found (false; the lower-case container; "!" and the name gated
// whole), so that a script's calls cost one table read each after the
// first of each verb: scripts call the same few verbs again and again.
func gateLua(list []string) (vars, check string) {
	if len(list) == 0 {
		return "", ""
	}
	var gc, gw, gs strings.Builder
	seen := map[string]bool{}
	for _, sp := range []*strings.Builder{&gc, &gw, &gs} {
		sp.WriteByte(' ')
	}
	for _, g := range list {
		full, word, byArg := strings.Cut(g, " ")
		name, _, isSub := strings.Cut(full, "|")
		if !seen[name] {
			seen[name] = true
			gc.WriteString(name + " ")
		}
		switch {
		case !isSub:
			gw.WriteString(name + " ")
		case byArg:
			gs.WriteString(full + "+" + word + " ")
		default:
			gs.WriteString(full + " ")
		}
	}
	pre, post, _ := strings.Cut(errGatedScript("\x01"), "\x01")
	check = `  local gv = GV[verb]
  if gv == nil and verb ~= nil then
    gv = false
    if type(verb) == 'string' and #verb <= ` + strconv.Itoa(gateMaxLen(list)) + ` then
      local lv = string.lower(verb)
      if find(` + luaQuote(gw.String()) + `, ' ' .. lv .. ' ', 1, true) then gv = '!' .. lv
      elseif find(` + luaQuote(gc.String()) + `, ' ' .. lv .. ' ', 1, true) then gv = lv end
    end
    if verb == verb then GV[verb] = gv end
  end
  if gv then
    local c, s, a = nil, select(2, ...)
    if string.sub(gv, 1, 1) == '!' then c = string.upper(string.sub(gv, 2))
    elseif type(s) == 'string' or type(s) == 'number' then
      local GS = ` + luaQuote(gs.String()) + `
      s = string.lower(tostring(s))
      if find(GS, ' ' .. gv .. '|' .. s .. ' ', 1, true) or type(a) == 'string' and find(GS, ' ' .. gv .. '|' .. s .. '+' .. string.lower(a) .. ' ', 1, true) then c = string.upper(gv .. ' ' .. s) end
    end
    if c then return {err = ` + luaQuote(pre) + ` .. c .. ` + luaQuote(post) + `} end
  end
`
	return "local GV = {}\n", check
}

// Read-only scripts (EVAL_RO, EVALSHA_RO of a known body, a body with
// flags=no-writes) need no check of the lock rules: Valkey refuses their
// writes. It does not refuse the admin CLUSTER subcommands there, which
// carry no "write" flag (CLUSTER DELSLOTS runs from EVAL_RO). So while the
// gate is in force for the session, such a script runs under a monitor
// with the gate alone: no argument is hot, so no record is read or
// written.

var gateOnlyCache sync.Map // *commands.Table → *monitorRules

// gateOnlyRules is the monitor's rules of a read-only script: the gate of
// g, nothing hot.
func gateOnlyRules(g *commands.Table) *monitorRules {
	if m, ok := gateOnlyCache.Load(g); ok {
		return m.(*monitorRules)
	}
	m := &monitorRules{hot: "false", own: "false", lock: "false", guard: "false", ks: luaQuote(ksFallback)}
	m.gateVars, m.gate = gateLua(g.GatedList())
	sum := sha1.Sum([]byte("gate-only\x00" + m.gate))
	m.id = hex.EncodeToString(sum[:])
	gateOnlyCache.Store(g, m)
	return m
}

// gateOnlyPlan runs a read-only script under the gate alone (ro: sent as
// EVAL_RO), or is the zero Plan (forwarded as it came) when the session
// is not gated or the script cannot reach Valkey.
func (d *Decider) gateOnlyPlan(verb []byte, body scriptBody, sha string, keys, argv [][]byte, s Session, ro bool) Plan {
	g := d.gateTable()
	if g == nil || unmonitored(body) || mayReconfigure(s) {
		return Plan{}
	}
	w := monitored(body, sha, MonitorShape{}, gateOnlyRules(g))
	if ro {
		w = &Script{Name: w.Name, Body: w.Body, SHA: w.SHA, Client: w.Client, RO: true}
	}
	run, known := d.Epoch.args()
	args := make([][]byte, 0, len(argv)+3)
	args = append(append(args, argv...), d.keep(), known, run)
	return Plan{Kind: Run, Script: w, Keys: keys, Args: args, Shape: ScriptReply, Verb: verb}
}
