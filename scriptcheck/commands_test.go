package scriptcheck

import (
	"fmt"
	"sort"
	"testing"

	"github.com/lockproxy/lockproxy/internal/servertable"
)

// String shows a spec by its effect: a read at any position is posNone (no
// site either way).
func (s cmdSpec) String() string {
	if s.op == OpNone && (s.pos == posFirst || s.pos == posAll || s.pos == posPairs) {
		s.pos = posNone
	}
	if s.pos == posSpecs {
		return fmt.Sprintf("ranges %v", s.ranges)
	}
	return fmt.Sprintf("pos %d op %d", s.pos, s.op)
}

// TestFallbackAgrees: every command of the fallback that the tables of
// valkey-server 8 and redis-server 7.0 describe (see derive) is described
// the same way, positions and effect; the classification of the test
// scripts is the same with either table as without. A name the server does
// not have (HSETEX on Valkey 8) or whose specs derive cannot read (OBJECT,
// SINTERCARD) keeps the fallback.
func TestFallbackAgrees(t *testing.T) {
	for _, bin := range []string{"valkey-server", "redis-server"} {
		t.Run(bin, func(t *testing.T) {
			tab := servertable.Load(t, bin)
			var diffs []string
			derivedN := 0
			for name, want := range fallback {
				c := tab.LookupString(name)
				if c == nil {
					continue
				}
				got, ok := derive(c)
				if !ok {
					continue
				}
				derivedN++
				if got.String() != want.String() {
					diffs = append(diffs, fmt.Sprintf("%s: fallback %v, table %v", name, want, got))
				}
			}
			for name, want := range byName {
				if c := tab.LookupString(name); c != nil && want.pos != posSpecial {
					if got, ok := derive(c); ok && got.String() != want.String() && want.op != OpCreate && name != "MOVE" && name != "GETDEL" {
						diffs = append(diffs, fmt.Sprintf("%s: by name %v, table %v", name, want, got))
					}
				}
			}
			sort.Strings(diffs)
			for _, d := range diffs {
				t.Error(d)
			}
			if derivedN < len(fallback)*3/4 {
				t.Errorf("only %d of %d fallback commands derived from the table", derivedN, len(fallback))
			}
			UseTable(tab)
			defer UseTable(nil)
			TestClassifyFiles(t)
		})
	}
}

// TestDerivedCommands: with a table, commands the fallback does not know
// are read from their key specs: a destination overwritten blind, sources
// only read; without one they stay Unknown.
func TestDerivedCommands(t *testing.T) {
	tab := servertable.Load(t, "valkey-server")
	src := "redis.call('SINTERSTORE', KEYS[1], KEYS[2], KEYS[3])\nreturn redis.call('LMPOP', 1, KEYS[4], 'LEFT')"
	before := Analyze(src)
	if v, _ := before.Key(1); v != Unknown {
		t.Fatalf("without a table SINTERSTORE's destination is %v", v)
	}
	UseTable(tab)
	defer UseTable(nil)
	r := Analyze(src)
	for i, want := range []Verdict{Blind, Guarded, Guarded, Unknown} {
		if v, _ := r.Key(i + 1); v != want {
			t.Errorf("KEYS[%d]: %v, want %v; sites:\n%s", i+1, v, want, dumpSites(r))
		}
	}
}
