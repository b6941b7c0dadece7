package cmdgrammar

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
)

// Pools are the values the generator draws arguments from.
type Pools struct {
	Keys    []string            // key arguments (protected and plain keys)
	Strings []string            // drawn for some string arguments (tokens, field names ...)
	ByName  map[string][]string // values for arguments of a name ("host", "port", "function-code" ...)
	// Bare are argument lists for commands whose docs give no arguments
	// though the command takes some (DEBUG): by command name.
	Bare map[string][][]string
	Now  int64 // unix seconds, the base of unix-time arguments
}

// Line is one generated command line.
type Line struct {
	Args  []string // the command's words, then its arguments
	Keys  []int    // indexes in Args of the key arguments
	Marks []string // the mutations applied, for the report
}

// The mutations a line may carry, each chosen per line.
const (
	MarkLower    = "lower"    // every word and token in lower case
	MarkMixed    = "mixed"    // each word in a random mix of cases
	MarkRepeat   = "repeat"   // optional arguments and tokens repeated
	MarkConflict = "conflict" // two alternatives of a oneof
	MarkOrder    = "order"    // runs of optional arguments in another order
	MarkBoundary = "boundary" // numbers from the edges (0, -1, huge, floats, words)
	MarkExtra    = "extra"    // arguments beyond the grammar
	MarkMissing  = "missing"  // one argument dropped
)

type gen struct {
	rng      *rand.Rand
	c        *Command
	p        *Pools
	line     Line
	caseMode int // 0 as documented, 1 lower, 2 mixed
	repeat   bool
	order    bool
	boundary bool
	all      bool // every optional argument present
}

// Generate makes one command line for c from the grammar, with mutations
// chosen by rng. Its first words are the command's (in the line's case).
func Generate(rng *rand.Rand, c *Command, p *Pools) Line {
	g := &gen{rng: rng, c: c, p: p}
	g.caseMode = []int{0, 0, 1, 2}[rng.IntN(4)]
	g.repeat = rng.IntN(10) < 3
	g.order = rng.IntN(10) < 3
	g.boundary = rng.IntN(10) < 3
	g.all = rng.IntN(10) < 2
	switch g.caseMode {
	case 1:
		g.mark(MarkLower)
	case 2:
		g.mark(MarkMixed)
	}
	if g.boundary {
		g.mark(MarkBoundary)
	}
	for _, w := range c.Words {
		g.emit(g.word(w))
	}
	g.args(c.Args)
	if bare := p.Bare[c.Name()]; len(c.Args) == 0 && len(bare) > 0 {
		for i, a := range bare[rng.IntN(len(bare))] {
			if i == 0 {
				a = g.word(a)
			}
			g.emit(a)
		}
	}
	if rng.IntN(10) == 0 {
		g.mark(MarkExtra)
		for n := 1 + rng.IntN(2); n > 0; n-- {
			if rng.IntN(2) == 0 && len(p.Keys) > 0 {
				g.key()
			} else {
				g.emit(g.str())
			}
		}
	}
	if rng.IntN(10) == 0 && len(g.line.Args) > len(c.Words) {
		g.mark(MarkMissing)
		g.drop(len(c.Words) + rng.IntN(len(g.line.Args)-len(c.Words)))
	}
	return g.line
}

func (g *gen) mark(m string) {
	for _, x := range g.line.Marks {
		if x == m {
			return
		}
	}
	g.line.Marks = append(g.line.Marks, m)
}

func (g *gen) emit(s string) { g.line.Args = append(g.line.Args, s) }

func (g *gen) key() {
	g.line.Keys = append(g.line.Keys, len(g.line.Args))
	g.emit(g.p.Keys[g.rng.IntN(len(g.p.Keys))])
}

// drop removes argument i and renumbers the key indexes after it.
func (g *gen) drop(i int) {
	g.line.Args = append(g.line.Args[:i], g.line.Args[i+1:]...)
	keys := g.line.Keys[:0]
	for _, k := range g.line.Keys {
		switch {
		case k < i:
			keys = append(keys, k)
		case k > i:
			keys = append(keys, k-1)
		}
	}
	g.line.Keys = keys
}

// word is a command word or token in the line's case.
func (g *gen) word(w string) string {
	switch g.caseMode {
	case 1:
		return strings.ToLower(w)
	case 2:
		b := []rune(w)
		for i, r := range b {
			if g.rng.IntN(2) == 0 {
				b[i] = unicode.ToLower(r)
			} else {
				b[i] = unicode.ToUpper(r)
			}
		}
		return string(b)
	}
	return strings.ToUpper(w)
}

// args emits a list of sibling arguments; with the order mutation, each
// run of consecutive optional ones comes in a random order.
func (g *gen) args(list []Arg) {
	idx := make([]int, len(list))
	for i := range idx {
		idx[i] = i
	}
	if g.order {
		for i := 0; i < len(list); {
			j := i
			for j < len(list) && list[j].Optional {
				j++
			}
			if j-i > 1 {
				run := idx[i:j]
				g.rng.Shuffle(len(run), func(a, b int) { run[a], run[b] = run[b], run[a] })
				g.mark(MarkOrder)
			}
			if j == i {
				j++
			}
			i = j
		}
	}
	for _, i := range idx {
		g.arg(list[i])
	}
}

func (g *gen) arg(a Arg) {
	if a.Optional && !g.all && g.rng.IntN(2) == 0 {
		return
	}
	n := 1
	if a.Multiple {
		n = 1 + g.rng.IntN(3)
	}
	if g.repeat && (a.Optional || a.Multiple) && g.rng.IntN(2) == 0 {
		n += 1 + g.rng.IntN(2)
		g.mark(MarkRepeat)
	}
	choice := -1 // a oneof repeated repeats its alternative (PX a PX b, as Valkey accepts)
	if a.Multiple {
		choice = -2 // each of several values chooses anew
	}
	for i := 0; i < n; i++ {
		if a.Token != "" && (i == 0 || a.MultipleToken || !a.Multiple) {
			g.emit(g.word(a.Token))
		}
		g.value(a, &choice)
	}
}

func (g *gen) value(a Arg, choice *int) {
	if vals := g.p.ByName[a.Name]; len(vals) > 0 && a.Type != "pure-token" && !g.blockingTimeout(a) && g.rng.IntN(5) > 0 {
		g.emit(vals[g.rng.IntN(len(vals))])
		return
	}
	switch a.Type {
	case "pure-token":
	case "block":
		g.args(a.Args)
	case "oneof":
		if len(a.Args) == 0 {
			return
		}
		first := g.rng.IntN(len(a.Args))
		if *choice >= 0 {
			first = *choice
		} else if *choice == -1 {
			*choice = first
		}
		g.one(a.Args[first])
		if g.repeat && len(a.Args) > 1 && g.rng.IntN(3) == 0 {
			g.mark(MarkConflict)
			g.one(a.Args[(first+1+g.rng.IntN(len(a.Args)-1))%len(a.Args)])
		}
	case "key":
		g.key()
	case "integer":
		g.emit(g.integer(a))
	case "double":
		g.emit(g.double(a))
	case "unix-time":
		g.emit(g.pick(
			[]string{strconv.FormatInt(g.p.Now+600, 10), strconv.FormatInt((g.p.Now+600)*1000, 10)},
			[]string{"0", "1", "-1", "9223372036854775807", strconv.FormatInt(g.p.Now-10, 10), "x"}))
	case "pattern":
		g.emit(g.pick([]string{"*", "*:lock", "{o}:*", "v:*", "*lockproxy*"}, []string{"", "[", "\\", "?*"}))
	default: // string, and any type a later Valkey adds
		g.emit(g.str())
	}
}

// one emits an alternative of a oneof: it is there even when flagged optional.
func (g *gen) one(a Arg) {
	a.Optional = false
	g.arg(a)
}

func (g *gen) pick(sensible, edge []string) string {
	if g.boundary && g.rng.IntN(2) == 0 {
		return edge[g.rng.IntN(len(edge))]
	}
	return sensible[g.rng.IntN(len(sensible))]
}

// blockingTimeout reports an argument that bounds how long a blocking
// command waits: it gets short values, so that a line does not block.
func (g *gen) blockingTimeout(a Arg) bool {
	return g.c.HasFlag("blocking") && (a.Name == "timeout" || a.Name == "milliseconds")
}

func (g *gen) integer(a Arg) string {
	if g.blockingTimeout(a) {
		return g.pick([]string{"50"}, []string{"-1", "x", "1.5"})
	}
	return g.pick([]string{"0", "1", "2", "3", "10", "1000", "600000"},
		[]string{"-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1.5", "x", "", "+1", "0x10", "1e3"})
}

func (g *gen) double(a Arg) string {
	if g.blockingTimeout(a) {
		return g.pick([]string{"0.05"}, []string{"-1", "x", "inf"})
	}
	return g.pick([]string{"0", "1", "1.5", "-2.5", "10"}, []string{"inf", "-inf", "nan", "1e400", "x", "", "-0", "0x1p3"})
}

func (g *gen) str() string {
	if len(g.p.Strings) > 0 && g.rng.IntN(2) == 0 {
		return g.p.Strings[g.rng.IntN(len(g.p.Strings))]
	}
	return g.pick([]string{"x", "value", "0", "1"}, []string{"", "-1", "\x00", strings.Repeat("a", 300)})
}
