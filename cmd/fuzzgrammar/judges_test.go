package main

import (
	"fmt"
	"testing"
)

// The judges comparison: three ways in, agree / Valkey's own difference /
// disagree out; Valkey is asked only about the ways in a conflict.
func TestJudge(t *testing.T) {
	lp := way{out: refusedByProxy, code: "NOTOWNER"}
	vk := way{out: refusedByValkey}
	ran := way{out: harmless}
	ranChanged := way{out: harmless, changed: true}
	to := way{out: noReply}
	fail := way{out: failed}
	accepts := func(m int) oracleVerdict { return oracleAccepts }
	only := func(refused ...int) func(int) oracleVerdict {
		return func(m int) oracleVerdict {
			for _, r := range refused {
				if r == m {
					return oracleRefuses
				}
			}
			return oracleAccepts
		}
	}
	for _, c := range []struct {
		name  string
		ws    [3]way
		ask   func(int) oracleVerdict
		want  judgement
		pairs []conflict
		asked []int // the ways Valkey may be asked about
	}{
		{"all refused by lockproxy", [3]way{lp, lp, lp}, accepts, agree, nil, nil},
		{"all ran", [3]way{ran, ranChanged, ran}, accepts, agree, nil, nil},
		{"lockproxy and Valkey refused", [3]way{lp, vk, vk}, accepts, agree, nil, nil},
		{"ran and Valkey refused", [3]way{ran, vk, ran}, accepts, agree, nil, nil},
		{"a failure is no conflict", [3]way{lp, fail, fail}, accepts, agree, nil, nil},
		{"no reply is no conflict", [3]way{lp, to, lp}, accepts, agree, nil, nil},
		{"plain refused, eval ran", [3]way{lp, ran, lp}, accepts, disagree, []conflict{{0, 1}, {2, 1}}, []int{0, 1, 2}},
		{"plain ran and changed, fcall refused", [3]way{ranChanged, vk, lp}, accepts, disagree, []conflict{{2, 0}}, []int{0, 2}},
		{"Valkey refuses the refused form itself", [3]way{ran, lp, lp}, only(1, 2), valkeys, []conflict{{1, 0}}, []int{0, 1, 2}},
		{"Valkey refuses the form that ran", [3]way{lp, ran, lp}, only(1), valkeys, []conflict{{0, 1}}, []int{0, 1, 2}},
		{"Valkey silent", [3]way{lp, ran, ran}, func(int) oracleVerdict { return oracleSilent }, valkeys, []conflict{{0, 1}}, []int{0, 1, 2}},
		{"one pair of two is Valkey's", [3]way{lp, ran, ran}, only(1), disagree, []conflict{{0, 2}}, []int{0, 1, 2}},
	} {
		asked := map[int]int{}
		got, pairs := judge(c.ws, func(m int) oracleVerdict { asked[m]++; return c.ask(m) })
		if got != c.want || fmt.Sprint(pairs) != fmt.Sprint(c.pairs) {
			t.Errorf("%s: %v %+v, want %v %+v", c.name, got, pairs, c.want, c.pairs)
		}
		for m, n := range asked {
			if n > 1 {
				t.Errorf("%s: Valkey asked %d times about way %d", c.name, n, m)
			}
			if !contains(intsToStrings(c.asked), modeNames[m]) {
				t.Errorf("%s: Valkey asked about way %d, in no conflict", c.name, m)
			}
		}
	}
	if got := classes([3]way{lp, ranChanged, vk}); got != "lp:NOTOWNER ran* vk" {
		t.Errorf("classes: %q", got)
	}
}

func intsToStrings(ms []int) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = modeNames[m]
	}
	return out
}

// The tally: agreements, Valkey's own differences and disagreements are
// counted apart; examples are bounded per class triple; only
// disagreements count toward -judges=fail.
func TestJudgesTally(t *testing.T) {
	j := newJudges()
	d := disagreement{cmd: "COPY", classes: "lp:NOTOWNER ran ran", ways: [3]way{{out: refusedByProxy, code: "NOTOWNER"}, {out: harmless}, {out: harmless}}, pairs: []conflict{{0, 1}, {0, 2}}}
	j.add(agree, disagreement{})
	j.add(valkeys, disagreement{classes: "ran vk vk"})
	for i := 0; i < maxJudgeExamples+2; i++ {
		j.add(disagree, d)
	}
	if j.compared != maxJudgeExamples+4 || j.agreed != 1 || j.valkeys != 1 || j.disagreements() != maxJudgeExamples+2 || j.byCmd["COPY"] != maxJudgeExamples+2 {
		t.Fatalf("%+v", j)
	}
	if n := len(j.byClasses[d.classes]); n != maxJudgeExamples+2 {
		t.Fatalf("class count %d", n)
	}
}

// The documented differences: each by its rule, and no further (in
// another database, without the token, a pair outside the rule, or a
// change made, it is a disagreement).
func TestKnown(t *testing.T) {
	lp := func(code string) way { return way{out: refusedByProxy, code: code} }
	ran, ranChanged := way{out: harmless}, way{out: harmless, changed: true}
	line := func(ws [3]way, db int, token, variable bool) disagreement {
		_, pairs := judge(ws, func(int) oracleVerdict { return oracleAccepts })
		return disagreement{ways: ws, db: db, token: token, variable: variable, pairs: pairs}
	}
	for _, c := range []struct {
		name string
		d    disagreement
		want string
	}{
		{"holder's script writes its lock", line([3]way{lp("LOCKED"), ran, ranChanged}, holderDB, false, false), knownOwner},
		{"token passed", line([3]way{lp("NOTOWNER"), ranChanged, ranChanged}, 0, true, false), knownOwner},
		{"TypeGate", line([3]way{lp("WRONGTYPE"), ran, ran}, holderDB, false, false), knownOwner},
		{"no token, no lock held", line([3]way{lp("LOCKED"), ranChanged, ranChanged}, 0, false, false), ""},
		{"another code", line([3]way{lp("UNFENCED"), ran, ran}, holderDB, false, false), ""},
		{"scripts refused, plain ran", line([3]way{ran, lp("NOTOWNER"), lp("NOTOWNER")}, holderDB, true, false), ""},
		{"own key in KEYS", line([3]way{ran, lp(ownKeyCode), lp(ownKeyCode)}, 0, false, false), knownOwnKeys},
		{"own key, plain changed something", line([3]way{ranChanged, lp(ownKeyCode), lp(ownKeyCode)}, 0, false, false), ""},
		{"own key, one script ran", line([3]way{ran, lp(ownKeyCode), ran}, 0, false, false), ""},
		{"variable flags", line([3]way{lp("UNFENCED"), ran, ran}, 0, false, true), knownVariable},
		{"variable flags, a change", line([3]way{lp("UNFENCED"), ranChanged, ranChanged}, 0, false, true), ""},
		{"variable flags, a script refused", line([3]way{ran, lp("UNFENCED"), ran}, 0, false, true), ""},
	} {
		if got := knownLine(c.d); got != c.want {
			t.Errorf("%s: %q, want %q (pairs %v)", c.name, got, c.want, c.d.pairs)
		}
	}
	j := newJudges()
	j.add(disagree, line([3]way{lp("LOCKED"), ran, ran}, holderDB, false, false))
	if j.disagreements() != 0 || j.known[knownOwner] != 1 {
		t.Errorf("a known difference counted: %+v", j)
	}
}
