// Command fuzzgrammar is lockproxy's grammar fuzzer (issue 38, item 7): it
// reads Valkey's own command grammar (COMMAND DOCS, COMMAND INFO) from a
// scratch valkey-server, generates command lines for every command that
// writes a key or reconfigures Valkey, and sends each from a stranger (a
// client that holds nothing) through lockproxy as a plain command, as
// the call of an EVAL and as the call of an FCALL, in front of a world
// that holds locks in two databases (and of a small cluster). After each
// it reads the world directly and fails on any change the stranger may
// not make. It also compares the three ways of each line: lockproxy's two
// judges (rewrite.Decider, the script monitor) must decide alike. See
// docs/fuzz-grammar.md.
//
//	fuzzgrammar [-duration 60s] [-seed N] [-world both|standalone|cluster] [-gate=true] [-judges=fail|report]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/internal/cmdgrammar"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/redis/go-redis/v9"
)

func main() {
	duration := flag.Duration("duration", 60*time.Second, "how long to generate lines (both worlds together)")
	seed := flag.Uint64("seed", 0, "the RNG's seed; 0 picks one (printed, so a run can be repeated)")
	worlds := flag.String("world", "both", "standalone, cluster or both (the cluster gets a third of the time)")
	gate := flag.Bool("gate", true, "fail when a command lockproxy's gate keeps from clients that are no admin (commands.Table.Gated: Valkey's admin flag, less the documented reads) runs in Valkey for the stranger")
	judgesMode := flag.String("judges", "fail", "fail or report: whether a line that lockproxy refused one way (plain, EVAL, FCALL) and ran another, where Valkey itself answers both forms alike, fails the run")
	perCmd := flag.Int("examples", 3, "failures printed per command")
	verbose := flag.Bool("v", false, "print each failure as it happens")
	only := flag.String("commands", "", "comma-separated commands to fuzz (SET,COPY,\"CONFIG SET\"; a container word takes its subcommands); empty = all")
	flag.Parse()
	if *judgesMode != "fail" && *judgesMode != "report" {
		fmt.Fprintf(os.Stderr, "fuzzgrammar: -judges is fail or report, not %q\n", *judgesMode)
		os.Exit(2)
	}
	// go-redis logs each failed dial; servers stopped by lines are expected.
	redis.SetLogger(quietRedis{})
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	fmt.Printf("fuzzgrammar: seed %d (repeat with -seed %d), duration %s, world %s\n", *seed, *seed, *duration, *worlds)
	rep := newReport(*seed)
	err := run(*seed, *duration, *worlds, *gate, *verbose, *only, rep)
	rep.print(os.Stdout, *perCmd)
	rep.judges.print(os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fuzzgrammar: %v\n", err)
		os.Exit(2)
	}
	if len(rep.failures) > 0 || (*judgesMode == "fail" && rep.judges.disagreements() > 0) {
		os.Exit(1)
	}
}

func run(seed uint64, duration time.Duration, worlds string, gate, verbose bool, only string, rep *report) error {
	start := time.Now()
	or, err := newOracle(false)
	if err != nil {
		return fmt.Errorf("oracle: %v", err)
	}
	defer or.close()
	table, err := readTable(or)
	if err != nil {
		return err
	}
	dumps, err := or.dumps()
	if err != nil {
		return fmt.Errorf("oracle dumps: %v", err)
	}
	gated, variable, err := gatedBy(or)
	if err != nil {
		return fmt.Errorf("oracle's command table: %v", err)
	}
	r := &runner{rng: rand.New(rand.NewPCG(seed, seed>>32^0x9e3779b9)), oracle: or, rep: rep, gate: gate, gated: gated, variable: variable,
		log: func(f string, a ...any) {
			if verbose {
				fmt.Printf(f+"\n", a...)
			}
		}}
	p := pools(dumps)
	p.Now = time.Now().Unix()
	var plain, clusterCmds []*cmdgrammar.Command
	for _, c := range table.Fuzzed() {
		if !selected(c, only) {
			continue
		}
		if c.Words[0] == "CLUSTER" {
			clusterCmds = append(clusterCmds, c)
		} else {
			plain = append(plain, c)
		}
	}
	fmt.Printf("fuzzgrammar: %d commands from COMMAND DOCS, %d fuzzed (%d write a key, %d reconfigure Valkey, %d of them CLUSTER)\n",
		len(table.Commands), len(table.Fuzzed()), count(table.Fuzzed(), (*cmdgrammar.Command).Writes),
		count(table.Fuzzed(), (*cmdgrammar.Command).Reconfigures), len(clusterCmds))
	standaloneEnd := start.Add(duration)
	if worlds == "both" {
		standaloneEnd = start.Add(duration * 2 / 3)
	}
	if worlds == "both" || worlds == "standalone" {
		w, err := newWorld()
		if err != nil {
			return fmt.Errorf("standalone world: %v", err)
		}
		err = each(r, plain, standaloneEnd, func(c *cmdgrammar.Command) error { return r.line(w, p, or, c) })
		w.close()
		if err != nil {
			return err
		}
	}
	if worlds == "both" || worlds == "cluster" {
		return runCluster(r, p, clusterCmds, plain, start.Add(duration))
	}
	return nil
}

// rare are commands that take seconds a line (PFSELFTEST's self-test; the
// replication stream SYNC and PSYNC start, cut by a deadline) and have no
// arguments to vary: they get a line every fifth round only.
var rare = map[string]bool{"PFSELFTEST": true, "SYNC": true, "PSYNC": true}

// each runs lines of the commands, in a shuffled round robin so that
// every command gets lines, until end.
func each(r *runner, cmds []*cmdgrammar.Command, end time.Time, f func(*cmdgrammar.Command) error) error {
	if len(cmds) == 0 {
		return nil
	}
	order := make([]int, len(cmds))
	for i := range order {
		order[i] = i
	}
	for round := 0; ; round++ {
		r.rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, i := range order {
			if time.Now().After(end) {
				return nil
			}
			if rare[cmds[i].Name()] && round%5 != 0 {
				continue
			}
			if err := f(cmds[i]); err != nil {
				return fmt.Errorf("%s: %v", cmds[i].Name(), err)
			}
		}
	}
}

func readTable(or *oracle) (*cmdgrammar.Table, error) {
	docs, err := or.direct.Do(ctx, "COMMAND", "DOCS").Result()
	if err != nil {
		return nil, fmt.Errorf("COMMAND DOCS: %v", err)
	}
	info, err := or.direct.Do(ctx, "COMMAND", "INFO").Result()
	if err != nil {
		return nil, fmt.Errorf("COMMAND INFO: %v", err)
	}
	return cmdgrammar.Parse(docs, info)
}

func count(cmds []*cmdgrammar.Command, f func(*cmdgrammar.Command) bool) int {
	n := 0
	for _, c := range cmds {
		if f(c) {
			n++
		}
	}
	return n
}

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// selected reports whether c is one of the -commands list (all when empty).
func selected(c *cmdgrammar.Command, only string) bool {
	if only == "" {
		return true
	}
	for _, n := range strings.Split(only, ",") {
		n = strings.ToUpper(strings.TrimSpace(n))
		if c.Name() == n || strings.HasPrefix(c.Name(), n+" ") {
			return true
		}
	}
	return false
}

// gatedBy is lockproxy's gate verdict over the oracle's command table, as
// the proxy builds it from its upstream's (proxy/cmdtable.go), and
// whether a line's key flags are variable (keyspec.VariableFlags).
func gatedBy(or *oracle) (gated, variable func([]string) bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t, err := keyspec.Load(ctx, or.direct)
	if err != nil {
		return nil, nil, err
	}
	ct := commands.FromTable(t)
	bytes := func(args []string) [][]byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		return b
	}
	gated = func(args []string) bool { return ct.Gated(bytes(args)) }
	variable = func(args []string) bool {
		_, st := t.Keys(bytes(args), nil)
		return st == keyspec.VariableFlags
	}
	return gated, variable, nil
}
