package rewrite

import (
	"crypto/sha1"
	"encoding/hex"
	"sort"
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

// gateHint is the monitor gate's first filter: for each length of a
// gated name, the lower-case first letters of the gated names of that
// length. A verb whose length and first letter (folded to lower case:
// A-Z; any other byte folds to one no name starts with) are not among
// them is no gated name; the others go on to the full check.
func gateHint(names map[string]bool) map[int]string {
	h := map[int]string{}
	for n := range names {
		if !strings.ContainsRune(h[len(n)], rune(n[0])) {
			h[len(n)] += n[:1]
		}
	}
	return h
}

// gateHintLua is gateHint as a Lua condition on nv (the verb's length)
// and c (its first byte, folded): comparisons only, no table and no call,
// in length order.
func gateHintLua(h map[int]string) string {
	lens := make([]int, 0, len(h))
	for l := range h {
		lens = append(lens, l)
	}
	sort.Ints(lens)
	var b strings.Builder
	for i, l := range lens {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString("nv == " + strconv.Itoa(l) + " and (")
		for k := 0; k < len(h[l]); k++ {
			if k > 0 {
				b.WriteString(" or ")
			}
			b.WriteString("c == " + strconv.Itoa(int(h[l][k])))
		}
		b.WriteString(")")
	}
	return b.String()
}

// gateLua is the monitor's gate (monitor.lua's @GATE@, in run, and
// @GATEVARS@, before it) for a gated list, "" and "" for none. GC holds
// the names with a gated entry (a whole command or some of its
// subcommands); GW those gated whole; GS the gated subcommands as
// "container|sub", and "container|sub+word" for one gated with a word
// after it (ACL LOG RESET). gv is what the name check found (false; the
// lower-case container; "!" and the name gated whole); gateHint's few
// comparisons spare the check for nearly every verb a lock script calls.
// vars is empty now (@GATEVARS@ is kept for a per-run variable).
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
	// The hint first (gateHint): a lock script's verbs mostly miss it,
	// for a few comparisons; no memo table (a table per run costs Valkey
	// more than the check). No Lua comments: the monitor is rendered onto
	// one line.
	check = `  local gv = false
  local nv = type(verb) == 'string' and #verb or 0
  if nv > 0 then
    local c = string.byte(verb, 1)
    if c < 97 then c = c + 32 end
    if ` + gateHintLua(gateHint(seen)) + ` then
      local lv = string.lower(verb)
      if find(` + luaQuote(gw.String()) + `, ' ' .. lv .. ' ', 1, true) then gv = '!' .. lv
      elseif find(` + luaQuote(gc.String()) + `, ' ' .. lv .. ' ', 1, true) then gv = lv end
    end
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
	return "", check
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
