package rewrite

import (
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/policy"
)

type adminSession struct{ admin bool }

func (a *adminSession) Owner(*policy.Rule) string { return "c1" }
func (a *adminSession) Proto() int                { return 2 }
func (a *adminSession) MayReconfigure() bool      { return a.admin }

// TestGateLua: the monitor's gate is made of the command table's gated
// list, entry for entry, and is in a script's monitor only while the
// deployment gates and the session may not reconfigure Valkey; a
// library's monitor has it whenever the deployment gates.
func TestGateLua(t *testing.T) {
	_, check := gateLua(commands.Fallback.GatedList())
	for _, g := range commands.Fallback.GatedList() {
		full, word, byArg := strings.Cut(g, " ")
		name, _, isSub := strings.Cut(full, "|")
		want := " " + name + " "
		if isSub {
			want = " " + full + " "
			if byArg {
				want = " " + full + "+" + word + " "
			}
		}
		if !strings.Contains(check, want) {
			t.Errorf("the gate's Lua lacks %q", want)
		}
	}
	if v, c := gateLua(nil); v != "" || c != "" {
		t.Errorf("an empty list gives %q %q", v, c)
	}
	rules, err := policy.NewRules([]policy.LockRule{{Pattern: "*:lock"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gate, admin, want bool
	}{{true, false, true}, {true, true, false}, {false, false, false}} {
		d := &Decider{Rules: rules, Gate: c.gate}
		m := d.monitorRulesFor(&adminSession{admin: c.admin})
		text := MonitorBody("return redis.call('GET', KEYS[1])", MonitorShape{}, m)
		if got := strings.Contains(text, "NOADMIN lockproxy refused"); got != c.want {
			t.Errorf("gate %v, admin %v: gated monitor %v", c.gate, c.admin, got)
		}
		if got := d.monitorRules().gate != ""; got != c.gate {
			t.Errorf("gate %v: a library's monitor gated %v", c.gate, got)
		}
	}
}

// TestGateHint: every gated name passes the hint, in any letter case,
// and the verbs lock scripts call most do not (PEXPIRE shares PFDEBUG's
// length and letter: it costs the full check); the Lua condition holds
// every pair and nothing else.
func TestGateHint(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range commands.Fallback.GatedList() {
		name, _, _ := strings.Cut(g, "|")
		name, _, _ = strings.Cut(name, " ")
		seen[name] = true
	}
	h := gateHint(seen)
	fold := func(c byte) byte {
		if c < 97 {
			c += 32
		}
		return c
	}
	pass := func(v string) bool { return strings.IndexByte(h[len(v)], fold(v[0])) >= 0 }
	for n := range seen {
		for _, v := range []string{n, strings.ToUpper(n)} {
			if !pass(v) {
				t.Errorf("%q misses the hint %q", v, h[len(v)])
			}
		}
	}
	for _, v := range []string{"get", "set", "del", "expire", "hget", "hset", "hdel", "incr", "pttl", "exists", "hexists", "hincrby", "getrange", "zadd", "SET", "Del"} {
		if pass(v) {
			t.Errorf("%q passes the hint: it costs the full check on every call", v)
		}
	}
	lua := gateHintLua(h)
	n := 0
	for _, cs := range h {
		n += len(cs)
	}
	if got := strings.Count(lua, "c == "); got != n {
		t.Errorf("the Lua condition has %d letters, the hint %d: %s", got, n, lua)
	}
}
