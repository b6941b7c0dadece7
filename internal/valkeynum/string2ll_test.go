package valkeynum

import (
	"math"
	"testing"
)

func TestString2ll(t *testing.T) {
	tests := []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"42", 42, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"+1", 0, false}, {"01", 0, false}, {"00", 0, false},
		{"-0", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1.0", 0, false},
		{"0x10", 0, false}, {"1e3", 0, false}, {"123456789012345678901", 0, false},
	}
	for _, tc := range tests {
		n, ok := String2ll(tc.in)
		if n != tc.n || ok != tc.ok {
			t.Errorf("String2ll(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
		if nb, okb := String2ll([]byte(tc.in)); nb != n || okb != ok {
			t.Errorf("String2ll([]byte(%q)) = %d, %v; the string form gave %d, %v", tc.in, nb, okb, n, ok)
		}
	}
}
