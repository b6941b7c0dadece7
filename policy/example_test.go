package policy

import "testing"

// Example gives a key the pattern matches, but for a negated class, whose
// stand-in text Match may refuse.
func TestPatternExample(t *testing.T) {
	for _, c := range []struct {
		pattern, want string
		match         bool
	}{
		{"lock:*", "lock:lockproxy-check-upstream", true},
		{"job:?:lock", "job:x:lock", true},
		{`a\*b*`, "a*blockproxy-check-upstream", true},
		{"r[abc]:*", "ra:lockproxy-check-upstream", true},
		{"r[^abc]*", "rlockproxy-check-upstreamlockproxy-check-upstream", true},
		{"r[^l]*", "rlockproxy-check-upstreamlockproxy-check-upstream", false},
		{"plain", "plain", true},
	} {
		p, err := Compile(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		got := p.Example()
		if got != c.want || p.Match([]byte(got)) != c.match {
			t.Errorf("%q: %q (matches %v), want %q (%v)", c.pattern, got, p.Match([]byte(got)), c.want, c.match)
		}
	}
}
