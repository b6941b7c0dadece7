package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// One judge (issue 38, item 2): a line sent plain, inside EVAL and inside
// FCALL must get the same decision from lockproxy, whether it is
// rewrite.Decider's (plain) or the monitor's (script calls). This file
// is the pure part: what became of each way in, agree or disagree out.

// way is what became of a line sent one way, as the judges comparison
// sees it.
type way struct {
	out     outcome
	code    string // refusedByProxy: lockproxy's code word (NOTOWNER, NOPERM ...)
	changed bool   // harmless: it changed a watched key (one whose token it passed)
}

// class is a way's outcome as printed: "lp:CODE", "vk", "ran", "ran*"
// (ran and changed a watched key), "to" (no reply), "FAIL".
func (w way) class() string {
	switch w.out {
	case refusedByProxy:
		return "lp:" + w.code
	case refusedByValkey:
		return "vk"
	case harmless:
		if w.changed {
			return "ran*"
		}
		return "ran"
	case noReply:
		return "to"
	}
	return "FAIL"
}

// classes is the (plain, eval, fcall) class triple of a line.
func classes(ws [3]way) string {
	return ws[0].class() + " " + ws[1].class() + " " + ws[2].class()
}

// conflict is a pair of ways of one line: lockproxy refused the first, the
// second ran.
type conflict struct{ refused, ran int }

// conflicts are the pairs of ways where lockproxy refused one and the
// other ran (harmless: it ran, changing nothing the stranger may not
// change). A way that failed or got no reply is in no pair: a failure is
// reported as one already, a missing reply decides nothing.
func conflicts(ws [3]way) []conflict {
	var out []conflict
	for i, a := range ws {
		if a.out != refusedByProxy {
			continue
		}
		for j, b := range ws {
			if b.out == harmless {
				out = append(out, conflict{i, j})
			}
		}
	}
	return out
}

// oracleVerdict is what Valkey itself, sent a way's form directly, said.
type oracleVerdict int

const (
	oracleUnasked oracleVerdict = iota
	oracleAccepts
	oracleRefuses // an error reply
	oracleSilent  // no reply
)

// judgement is the comparison of a line's three ways.
type judgement int

const (
	agree    judgement = iota // no way refused by lockproxy while another ran
	valkeys                   // they differ, and so do Valkey's own answers to the forms: Valkey's difference
	disagree                  // lockproxy refused one form and ran another that Valkey itself answers alike
)

// judge compares a line's three ways. A conflict is Valkey's own when
// Valkey, sent the two forms directly (in the stranger's database, with
// the same KEYS), does not accept both: a command not allowed in scripts,
// a key not declared, FUNCTION inside FCALL, a cross-slot script. Any
// other conflict is a disagreement of the judges; all of them are
// returned (for a disagreement), or the first (Valkey's own). ask gives
// Valkey's verdict on a way's form; it is called only for the ways in a
// conflict, once each.
func judge(ws [3]way, ask func(mode int) oracleVerdict) (judgement, []conflict) {
	cs := conflicts(ws)
	if len(cs) == 0 {
		return agree, nil
	}
	var asked [3]oracleVerdict
	verdict := func(m int) oracleVerdict {
		if asked[m] == oracleUnasked {
			asked[m] = ask(m)
		}
		return asked[m]
	}
	var out []conflict
	for _, c := range cs {
		if verdict(c.refused) == oracleAccepts && verdict(c.ran) == oracleAccepts {
			out = append(out, c)
		}
	}
	if len(out) > 0 {
		return disagree, out
	}
	return valkeys, cs[:1]
}

// disagreement is one line where the judges disagreed.
type disagreement struct {
	world   string
	db      int
	cmd     string
	ways    [3]way
	classes string
	pairs   []conflict
	args    [3][]string
	replies [3]string
	// token: the line passes the token of a lock held in db (the string
	// lock's value, the hash lock's owner field).
	token bool
	// variable: the plain command's key flags depend on its other
	// arguments (keyspec.VariableFlags: BITFIELD, SET): the plain judge
	// takes the declared, widest ones, the monitor asks Valkey.
	variable bool
}

// judges counts the comparison over a run.
type judges struct {
	compared, agreed, valkeys int
	byCmd                     map[string]int
	byClasses                 map[string][]disagreement // by classes(...), the examples bounded
	valkeysByClasses          map[string]int
	valkeysExample            map[string]disagreement // one per class triple
	known                     map[string]int          // by known(...) reason: reported, never failed
}

func newJudges() *judges {
	return &judges{byCmd: map[string]int{}, byClasses: map[string][]disagreement{},
		valkeysByClasses: map[string]int{}, valkeysExample: map[string]disagreement{}, known: map[string]int{}}
}

// maxJudgeExamples bounds the examples kept per class triple.
const maxJudgeExamples = 3

func (j *judges) add(v judgement, d disagreement) {
	j.compared++
	switch v {
	case agree:
		j.agreed++
	case valkeys:
		j.valkeys++
		j.valkeysByClasses[d.classes]++
		if _, ok := j.valkeysExample[d.classes]; !ok {
			j.valkeysExample[d.classes] = d
		}
	case disagree:
		if why := knownLine(d); why != "" {
			j.known[why]++
			return
		}
		j.byCmd[d.cmd]++
		if len(j.byClasses[d.classes]) < maxJudgeExamples {
			j.byClasses[d.classes] = append(j.byClasses[d.classes], d)
		} else {
			j.byClasses[d.classes] = append(j.byClasses[d.classes], disagreement{})
		}
	}
}

// disagreements is their count, known differences left out.
func (j *judges) disagreements() int {
	n := 0
	for _, c := range j.byCmd {
		n += c
	}
	return n
}

// Known differences between the judges (docs/fuzz-grammar.md, "One
// judge"): the fuzzer reports them and does not fail on them.
const (
	// knownOwner: the plain judge lets a lock key be changed only by
	// lockproxy's lock verbs (SET NX, the releases and renewals it
	// rewrites) and refuses any other write or a release without a grant
	// (LOCKED, NOTOWNER, or WRONGTYPE from TypeGate); the monitor lets a
	// script's call write a lock key that is absent, that the client
	// holds, or whose token the script passes. So a plain HSET, GETSET,
	// SETEX or INCRBYFLOAT of a lock is refused where the same call from
	// the holder's (or a token-passing) script runs.
	knownOwner = "lock writes by owner"
	// knownOwnKeys: a script that names one of lockproxy's own keys in
	// KEYS is refused before it runs (LOCKED, "one of lockproxy's own
	// keys"); a plain command may read them.
	knownOwnKeys = "own keys in KEYS"
	// knownVariable: for a command whose key flags depend on its other
	// arguments, the plain judge takes the declared (widest) flags and
	// refuses a read as a write (BITFIELD k GET ... on a guarded key,
	// UNFENCED); the monitor asks Valkey for the call's own flags.
	knownVariable = "declared key flags"
)

// known names the documented difference a disagreeing pair of ways is,
// or "" for none.
func known(d disagreement, c conflict) string {
	refused, ran := d.ways[c.refused], d.ways[c.ran]
	switch {
	case c.refused == 0 && (refused.code == "LOCKED" || refused.code == "NOTOWNER" || refused.code == "WRONGTYPE") &&
		(d.db == holderDB || d.token):
		// db holderDB: the stranger holds the world's lock names there,
		// and the hash lock is absent.
		return knownOwner
	case c.refused != 0 && refused.code == ownKeyCode && c.ran == 0 && !ran.changed:
		return knownOwnKeys
	case c.refused == 0 && d.variable && !ran.changed:
		return knownVariable
	}
	return ""
}

// ownKeyCode stands for the code word of lockproxy's refusal of a call
// that names one of its own keys (LOCKED, "one of lockproxy's own keys").
const ownKeyCode = "LOCKED:own"

// knownLine is the documented difference of every disagreeing pair of d
// (the first's name), or "" when one of them is none.
func knownLine(d disagreement) string {
	why := ""
	for _, c := range d.pairs {
		k := known(d, c)
		if k == "" {
			return ""
		}
		if why == "" {
			why = k
		}
	}
	return why
}

var modeNames = [3]string{modePlain, modeEval, modeFcall}

func (j *judges) print(w io.Writer) {
	fmt.Fprintf(w, "\njudges: %d lines compared, %d agreed, %d differed as Valkey itself does (not counted), %d DISAGREED",
		j.compared, j.agreed, j.valkeys, j.disagreements())
	if len(j.known) > 0 {
		fmt.Fprintf(w, ", known differences reported: %s", counts(j.known, "%s %d"))
	}
	fmt.Fprintln(w)
	if len(j.valkeysByClasses) > 0 {
		fmt.Fprintf(w, "  Valkey's own differences (plain eval fcall): %s\n", counts(j.valkeysByClasses, "[%s] %d"))
		var cls []string
		for c := range j.valkeysExample {
			cls = append(cls, c)
		}
		sort.Strings(cls)
		for _, c := range cls {
			d := j.valkeysExample[c]
			fmt.Fprintf(w, "    e.g. [%s] %s [%s world, db %d]: %s\n", c, d.cmd, d.world, d.db, quoteArgs(d.args[0]))
		}
	}
	if j.disagreements() == 0 {
		return
	}
	fmt.Fprintf(w, "  disagreements by command: %s\n", counts(j.byCmd, "%s %d"))
	var cls []string
	for c := range j.byClasses {
		cls = append(cls, c)
	}
	sort.Strings(cls)
	for _, c := range cls {
		ds := j.byClasses[c]
		fmt.Fprintf(w, "  == [%s] (plain eval fcall): %d\n", c, len(ds))
		for _, d := range ds {
			if d.cmd == "" {
				break
			}
			fmt.Fprintf(w, "  -- %s [%s world, db %d] lockproxy refused %s, ran %s\n", d.cmd, d.world, d.db, modeNames[d.pairs[0].refused], modeNames[d.pairs[0].ran])
			for m := range modeNames {
				fmt.Fprintf(w, "       %-5s %s\n             reply %s\n", modeNames[m], quoteArgs(d.args[m]), d.replies[m])
			}
		}
	}
}

// counts lists m's entries, each formatted by f (a %s for the key, a %d
// for the count), in order, joined by commas.
func counts(m map[string]int, f string) string {
	ks := make([]string, 0, len(m))
	for k, n := range m {
		ks = append(ks, fmt.Sprintf(f, k, n))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
