package telemetry

import "testing"

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"abc":               "***(3 bytes)",
		"0123456789ab":      "012***(12 bytes)",
		"a-much-longer-tok": "a-m***(17 bytes)",
	} {
		if got := Mask([]byte(in)); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}
