package cmdgrammar

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// setCmd is SET as Valkey 8's COMMAND DOCS gives it.
var setCmd = &Command{Words: []string{"SET"}, Arity: -3, Flags: []string{"write", "denyoom"}, Args: []Arg{
	{Name: "key", Type: "key"},
	{Name: "value", Type: "string"},
	{Name: "condition", Type: "oneof", Optional: true, Args: []Arg{
		{Name: "nx", Type: "pure-token", Token: "NX"}, {Name: "xx", Type: "pure-token", Token: "XX"}}},
	{Name: "get", Type: "pure-token", Token: "GET", Optional: true},
	{Name: "expiration", Type: "oneof", Optional: true, Args: []Arg{
		{Name: "seconds", Type: "integer", Token: "EX"},
		{Name: "milliseconds", Type: "integer", Token: "PX"},
		{Name: "unix-time-seconds", Type: "unix-time", Token: "EXAT"},
		{Name: "unix-time-milliseconds", Type: "unix-time", Token: "PXAT"},
		{Name: "keepttl", Type: "pure-token", Token: "KEEPTTL"}}},
}}

var pools = &Pools{Keys: []string{"v:lock", "plain"}, Strings: []string{"tok"}, Now: 1700000000}

func lines(seed uint64, c *Command, n int) []Line {
	rng := rand.New(rand.NewPCG(seed, 0))
	out := make([]Line, n)
	for i := range out {
		out[i] = Generate(rng, c, pools)
	}
	return out
}

// A seed gives the same lines again; another seed other lines.
func TestGenerateSeeded(t *testing.T) {
	a, b := lines(7, setCmd, 50), lines(7, setCmd, 50)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave other lines")
	}
	if reflect.DeepEqual(a, lines(8, setCmd, 50)) {
		t.Fatal("another seed gave the same lines")
	}
}

// Lines of SET: each starts with the command word, its key indexes point
// at pool keys, and over many lines every mutation shows up, including
// the ones issue 38 found Valkey accepts and lockproxy misread (PX a PX b,
// KEEPTTL KEEPTTL, lower case).
func TestGenerateSET(t *testing.T) {
	marks := map[string]bool{}
	var repeatedPX, repeatedKeepTTL, lowerNX, conflict, missing bool
	for _, l := range lines(1, setCmd, 3000) {
		if !strings.EqualFold(l.Args[0], "SET") {
			t.Fatalf("line %q does not start with SET", l.Args)
		}
		for _, k := range l.Keys {
			if !slices.Contains(pools.Keys, l.Args[k]) {
				t.Fatalf("line %q: index %d is no key", l.Args, k)
			}
		}
		for _, m := range l.Marks {
			marks[m] = true
		}
		up := strings.ToUpper(strings.Join(l.Args, " "))
		if strings.Count(" "+up+" ", " PX ") >= 2 {
			repeatedPX = true
		}
		if strings.Count(up, "KEEPTTL") >= 2 {
			repeatedKeepTTL = true
		}
		if slices.Contains(l.Args, "nx") {
			lowerNX = true
		}
		if slices.Contains(l.Args, "NX") && slices.Contains(l.Args, "XX") {
			conflict = true
		}
		if len(l.Args) < 3 {
			missing = true
		}
	}
	for _, m := range []string{MarkLower, MarkMixed, MarkRepeat, MarkConflict, MarkOrder, MarkBoundary, MarkExtra, MarkMissing} {
		if !marks[m] {
			t.Errorf("no line has the mutation %s", m)
		}
	}
	if !repeatedPX || !repeatedKeepTTL || !lowerNX || !conflict || !missing {
		t.Errorf("PX PX %v, KEEPTTL KEEPTTL %v, nx %v, NX XX %v, missing argument %v", repeatedPX, repeatedKeepTTL, lowerNX, conflict, missing)
	}
}

// Arguments named in ByName take their values from there; multiple_token
// repeats the token; a blocking command's timeout stays short.
func TestGenerateByNameAndTokens(t *testing.T) {
	c := &Command{Words: []string{"X"}, Flags: []string{"blocking"}, Args: []Arg{
		{Name: "host", Type: "string"},
		{Name: "pair", Type: "block", Token: "P", Multiple: true, MultipleToken: true, Args: []Arg{{Name: "n", Type: "integer"}}},
		{Name: "timeout", Type: "double"},
	}}
	p := &Pools{Keys: []string{"k"}, ByName: map[string][]string{"host": {"127.0.0.1"}}}
	rng := rand.New(rand.NewPCG(3, 3))
	// (Only lines with no mutation are checked for the timeout: an extra
	// argument may be a 0.)
	hosts, multi := 0, 0
	for i := 0; i < 500; i++ {
		l := Generate(rng, c, p)
		if l.Args[1] == "127.0.0.1" {
			hosts++
		}
		if strings.Count(strings.ToUpper(strings.Join(l.Args, " ")), " P ") >= 2 {
			multi++
		}
		if last := l.Args[len(l.Args)-1]; len(l.Marks) == 0 && (last == "0" || last == "0.0") {
			t.Fatalf("blocking timeout 0 in %q", l.Args)
		}
	}
	if hosts < 300 || multi == 0 {
		t.Fatalf("host from the pool %d/500, token repeated %d", hosts, multi)
	}
}

// A command documented without arguments takes its lines from Bare.
func TestGenerateBare(t *testing.T) {
	c := &Command{Words: []string{"DEBUG"}, Flags: []string{"admin"}}
	p := &Pools{Bare: map[string][][]string{"DEBUG": {{"SLEEP", "0"}}}}
	l := Generate(rand.New(rand.NewPCG(1, 1)), c, p)
	if len(l.Args) < 3 || !strings.EqualFold(l.Args[1], "SLEEP") || l.Args[2] != "0" {
		t.Fatalf("line %q", l.Args)
	}
}
