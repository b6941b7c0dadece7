package luaeval

import (
	"math"
	"testing"
)

func TestNumberFormats(t *testing.T) {
	tests := []struct {
		f                   float64
		fpconv, d2s, luaStr string
	}{
		{0.1, "0.1", "0.1", "0.1"},
		{1.0 / 3, "0.3333333333333333", "0.3333333333333333", "0.33333333333333"},
		{0.000644111, "6.441110000000001e-4", "6.441110000000001e-4", "0.000644111"}, // Grisu2 is not always shortest
		{1e20, "1e+20", "1e+20", "1e+20"},
		{1e21, "1e+21", "1e+21", "1e+21"},
		{5e18, "5e+18", "5e+18", "5e+18"}, // beyond LLONG_MAX/2: no integer form
		{1e-7, "1e-7", "1e-7", "1e-07"},
		{123.5, "123.5", "123.5", "123.5"},
		{4e18, "4e+18", "4000000000000000000", "4e+18"}, // d2string prints exact integers up to LLONG_MAX/2
		{math.Copysign(0, -1), "-0", "-0", "-0"},
		{math.Inf(1), "inf", "inf", "inf"},
		{math.Inf(-1), "-inf", "-inf", "-inf"},
		{math.NaN(), "nan", "nan", "nan"},
	}
	for _, tc := range tests {
		if got := fpconvDtoa(tc.f); got != tc.fpconv {
			t.Errorf("fpconvDtoa(%v) = %q, want %q", tc.f, got, tc.fpconv)
		}
		if got := d2string(tc.f); got != tc.d2s {
			t.Errorf("d2string(%v) = %q, want %q", tc.f, got, tc.d2s)
		}
		if got := luaNumberToString(tc.f); got != tc.luaStr {
			t.Errorf("luaNumberToString(%v) = %q, want %q", tc.f, got, tc.luaStr)
		}
	}
	// luaArgString: integers when exact and within ±LLONG_MAX/2, else fpconv.
	for f, want := range map[float64]string{3.0: "3", math.Copysign(0, -1): "0", 1.5: "1.5", 1e20: "1e+20", 4e18: "4000000000000000000"} {
		if got := luaArgString(f); got != want {
			t.Errorf("luaArgString(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestCachedPowers pins entries of the generated Grisu table to the
// published constants.
func TestCachedPowers(t *testing.T) {
	for i, want := range map[int]diyFp{
		0:  {18054884314459144840, -1220}, // 10^-348
		45: {16777216000000000000, -24},   // 10^12
		46: {12500000000000000000, 3},     // 10^20
		86: {12648080533535911531, 1066},  // 10^340
	} {
		if got := cachedPowers[i]; got != want {
			t.Errorf("cachedPowers[%d] = %v, want %v", i, got, want)
		}
	}
}

func TestStrtod(t *testing.T) {
	tests := []struct {
		in  string
		v   float64
		n   int
		bad bool // string2d rejects it
	}{
		{"1.5", 1.5, 3, false},
		{" 1", 1, 2, true},
		{"1e3x", 1000, 3, true},
		{"0x10", 16, 4, false},
		{"0x1p4", 16, 5, false},
		{"inf", math.Inf(1), 3, false},
		{"-Infinity", math.Inf(-1), 9, false},
		{"1e400", math.Inf(1), 5, true},
		{"1e-400", 0, 6, true},
		{".5", 0.5, 2, false},
		{"5.", 5, 2, false},
		{"e5", 0, 0, true},
		{"", 0, 0, true},
	}
	for _, tc := range tests {
		v, n, _ := strtod(tc.in)
		if v != tc.v || n != tc.n {
			t.Errorf("strtod(%q) = %v, %d; want %v, %d", tc.in, v, n, tc.v, tc.n)
		}
		if _, ok := string2d(tc.in); ok == tc.bad {
			t.Errorf("string2d(%q) ok=%v, want %v", tc.in, ok, !tc.bad)
		}
	}
}

func BenchmarkEvalRelease(b *testing.B) {
	s := New()
	for i := 0; i < b.N; i++ {
		s.Do("SET", "lock", "abc")
		s.Eval(releaseScript, []string{"lock"}, []string{"abc"})
	}
}
