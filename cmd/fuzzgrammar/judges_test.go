package main

import "testing"

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
		pair  conflict
		asked []int // the ways Valkey may be asked about
	}{
		{"all refused by lockproxy", [3]way{lp, lp, lp}, accepts, agree, conflict{}, nil},
		{"all ran", [3]way{ran, ranChanged, ran}, accepts, agree, conflict{}, nil},
		{"lockproxy and Valkey refused", [3]way{lp, vk, vk}, accepts, agree, conflict{}, nil},
		{"ran and Valkey refused", [3]way{ran, vk, ran}, accepts, agree, conflict{}, nil},
		{"a failure is no conflict", [3]way{lp, fail, fail}, accepts, agree, conflict{}, nil},
		{"no reply is no conflict", [3]way{lp, to, lp}, accepts, agree, conflict{}, nil},
		{"plain refused, eval ran", [3]way{lp, ran, lp}, accepts, disagree, conflict{0, 1}, []int{0, 1}},
		{"plain ran and changed, fcall refused", [3]way{ranChanged, vk, lp}, accepts, disagree, conflict{2, 0}, []int{0, 2}},
		{"Valkey refuses the refused form itself", [3]way{ran, lp, lp}, only(1, 2), valkeys, conflict{1, 0}, []int{0, 1, 2}},
		{"Valkey refuses the form that ran", [3]way{lp, ran, lp}, only(1), valkeys, conflict{0, 1}, []int{0, 1, 2}},
		{"Valkey silent", [3]way{lp, ran, ran}, func(int) oracleVerdict { return oracleSilent }, valkeys, conflict{0, 1}, []int{0, 1, 2}},
		{"one pair of two is Valkey's", [3]way{lp, ran, ran}, only(1), disagree, conflict{0, 2}, []int{0, 1, 2}},
	} {
		asked := map[int]int{}
		got, pair := judge(c.ws, func(m int) oracleVerdict { asked[m]++; return c.ask(m) })
		if got != c.want || (got != agree && pair != c.pair) {
			t.Errorf("%s: %v %+v, want %v %+v", c.name, got, pair, c.want, c.pair)
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
	d := disagreement{cmd: "COPY", classes: "lp:NOTOWNER ran ran"}
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
