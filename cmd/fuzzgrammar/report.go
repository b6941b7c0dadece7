package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The ways a line is sent through lockproxy.
const (
	modePlain = "plain"
	modeEval  = "eval"
	modeFcall = "fcall"
)

var modes = []string{modePlain, modeEval, modeFcall}

// outcome is what became of one line sent one way.
type outcome int

const (
	refusedByProxy  outcome = iota // an error reply, and the command never ran in Valkey
	refusedByValkey                // it reached Valkey, which refused it
	harmless                       // forwarded (or answered), and nothing it may not change changed
	noReply                        // no reply within the deadline
	failed                         // it changed what the stranger may not change
)

// failure is one line that changed the world, or (gate) a command that
// reconfigures Valkey and ran there for the stranger.
type failure struct {
	world, mode string
	db          int
	args        []string
	diffs       []string
	gateOnly    bool   // nothing watched changed; the command ran in Valkey
	oracle      string // what the oracle said of the plain line
	reply       string // lockproxy's reply
}

// maxDiffs bounds the changes printed per failure.
const maxDiffs = 6

// tally counts lines per command.
type tally struct {
	lines                        int
	oracleAccepted, oracleRefuse int
	oracleNoReply                int
	byMode                       map[string]*[5]int
	marks                        map[string]bool
	spent                        time.Duration // sending, judging and restoring its lines
}

type report struct {
	seed     uint64
	commands map[string]*tally
	failures map[string][]failure
	judges   *judges
}

func newReport(seed uint64) *report {
	return &report{seed: seed, commands: map[string]*tally{}, failures: map[string][]failure{}, judges: newJudges()}
}

func (r *report) cmd(name string) *tally {
	t := r.commands[name]
	if t == nil {
		t = &tally{byMode: map[string]*[5]int{}, marks: map[string]bool{}}
		for _, m := range modes {
			t.byMode[m] = &[5]int{}
		}
		r.commands[name] = t
	}
	return t
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if len(a) > 60 {
			a = a[:60] + "..."
		}
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// print writes the closing note: coverage, the oracle's and lockproxy's
// counts, and the failures grouped by command (at most perCmd each).
func (r *report) print(w io.Writer, perCmd int) {
	names := make([]string, 0, len(r.commands))
	var lines, variants, oa, or, on int
	var sum [5]int
	for n, t := range r.commands {
		names = append(names, n)
		lines += t.lines
		variants += len(t.marks)
		oa, or, on = oa+t.oracleAccepted, or+t.oracleRefuse, on+t.oracleNoReply
		for _, m := range t.byMode {
			for i := range sum {
				sum[i] += m[i]
			}
		}
	}
	sort.Strings(names)
	fmt.Fprintf(w, "\nfuzzgrammar: seed %d\n", r.seed)
	fmt.Fprintf(w, "coverage: %d commands, %d lines (each sent 3 ways through lockproxy: plain, EVAL, FCALL), %d command x mutation pairs\n", len(names), lines, variants)
	fmt.Fprintf(w, "oracle (Valkey directly): %d accepted, %d refused, %d no reply\n", oa, or, on)
	fmt.Fprintf(w, "through lockproxy (%d sends): %d refused by lockproxy, %d refused by Valkey, %d forwarded and harmless, %d no reply, %d FAILED\n",
		sum[0]+sum[1]+sum[2]+sum[3]+sum[4], sum[refusedByProxy], sum[refusedByValkey], sum[harmless], sum[noReply], sum[failed])
	fmt.Fprintf(w, "\n%-28s %6s %9s %6s | %-26s | %-26s | %-26s\n", "command", "lines", "oracle+/-", "secs", "plain lp-/vk-/ok/to/FAIL", "eval", "fcall")
	for _, n := range names {
		t := r.commands[n]
		row := fmt.Sprintf("%-28s %6d %4d/%-4d %6.1f", n, t.lines, t.oracleAccepted, t.oracleRefuse, t.spent.Seconds())
		for _, m := range modes {
			c := t.byMode[m]
			row += fmt.Sprintf(" | %-26s", fmt.Sprintf("%d/%d/%d/%d/%d", c[0], c[1], c[2], c[3], c[4]))
		}
		fmt.Fprintln(w, row)
	}
	fnames := make([]string, 0, len(r.failures))
	total := 0
	for n, fs := range r.failures {
		fnames = append(fnames, n)
		total += len(fs)
	}
	sort.Strings(fnames)
	gates := 0
	for _, fs := range r.failures {
		for _, f := range fs {
			if f.gateOnly {
				gates++
			}
		}
	}
	fmt.Fprintf(w, "\nfailures: %d, in %d commands: %d changed what the stranger may not change, %d only ran a command that reconfigures Valkey (-gate)\n",
		total, len(fnames), total-gates, gates)
	for _, n := range fnames {
		fs := r.failures[n]
		ways := map[string]int{}
		for _, f := range fs {
			ways[f.mode]++
		}
		kind := "changed the world"
		if fs[0].gateOnly {
			kind = "ran in Valkey (gate)"
			for _, f := range fs {
				if !f.gateOnly {
					kind = "changed the world, or ran in Valkey (gate)"
				}
			}
		}
		fmt.Fprintf(w, "\n== %s: %d failures (plain %d, eval %d, fcall %d): %s\n", n, len(fs), ways[modePlain], ways[modeEval], ways[modeFcall], kind)
		for i, f := range fs {
			if i == perCmd {
				fmt.Fprintf(w, "   ... %d more\n", len(fs)-perCmd)
				break
			}
			fmt.Fprintf(w, "-- [%s world, %s, db %d; oracle %s] %s\n     reply %s\n", f.world, f.mode, f.db, f.oracle, quoteArgs(f.args), f.reply)
			for j, d := range f.diffs {
				if j == maxDiffs {
					fmt.Fprintf(w, "     ... %d more changes\n", len(f.diffs)-maxDiffs)
					break
				}
				fmt.Fprintf(w, "     %s\n", d)
			}
		}
	}
}
