package commands

import (
	"strings"
	"testing"
)

// Every label's name, in any letter case, is that label; any other name
// is unknown, and a lookup allocates nothing.
func TestLabelOf(t *testing.T) {
	seen := map[string]bool{}
	for i, n := range LabelNames {
		if seen[n] {
			t.Errorf("label %q twice", n)
		}
		seen[n] = true
		if i == int(LabelUnknown) {
			continue
		}
		for _, form := range []string{n, strings.ToUpper(n)} {
			if got := LabelOf([]byte(form)); got != Label(i) {
				t.Errorf("LabelOf(%q) = %d (%s), want %d", form, got, LabelNames[got], i)
			}
		}
	}
	for _, name := range []string{"", "unknown", "nosuchcommand", "ge", "gett", "get\x00", "client|kill",
		strings.Repeat("x", 100), "set ", "lockproxyx"} {
		if got := LabelOf([]byte(name)); got != LabelUnknown {
			t.Errorf("LabelOf(%q) = %s, want unknown", name, LabelNames[got])
		}
	}
	for _, want := range []string{"get", "set", "eval", "lockproxy", "hello", "client", "xreadgroup", "georadiusbymember_ro"} {
		if !seen[want] {
			t.Errorf("no label %q", want)
		}
	}
	name := []byte("GeT")
	if n := testing.AllocsPerRun(100, func() { LabelOf(name) }); n != 0 {
		t.Errorf("LabelOf allocates %v times", n)
	}
}

func BenchmarkLabelOf(b *testing.B) {
	name := []byte("GET")
	for b.Loop() {
		LabelOf(name)
	}
}
