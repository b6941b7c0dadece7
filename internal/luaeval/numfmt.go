package luaeval

import (
	"math"
	"strconv"
	"strings"
)

// This file reproduces, bit for bit, the number parsing and printing that
// Valkey and Lua 5.1 do in C, because the differences show up in replies:
// a score printed as "1e+20" rather than "100000000000000000000", a Lua
// number passed to redis.call as "0.1" rather than "0.10000000000000001".

// double2ll is Valkey's util.h double2ll: the double converts to a long
// long only when it is integral and within ±LLONG_MAX/2, so that formatting
// it as an integer loses nothing.
func double2ll(d float64) (int64, bool) {
	const lim = float64(math.MaxInt64 / 2)
	if d < -lim || d > lim || math.IsNaN(d) {
		return 0, false
	}
	ll := int64(d)
	if float64(ll) == d {
		return ll, true
	}
	return 0, false
}

// fpconvDtoa is Valkey's fpconv_dtoa: the sign from the sign bit (so -0,
// -nan and -inf keep theirs), "nan"/"inf" for specials, else the shortest
// round-trip digits laid out by fpconv's emit_digits rules.
//
// The digits come from Grisu2 (grisu.go), as in Valkey; the differential
// test compares thousands of random doubles against a real server.
func fpconvDtoa(d float64) string {
	var b strings.Builder
	neg := math.Signbit(d)
	if neg {
		b.WriteByte('-')
	}
	switch {
	case d == 0:
		b.WriteByte('0')
		return b.String()
	case math.IsNaN(d):
		b.WriteString("nan")
		return b.String()
	case math.IsInf(d, 0):
		b.WriteString("inf")
		return b.String()
	}
	digits, K := grisu2(d)
	emitDigits(&b, string(digits), K, neg)
	return b.String()
}

// emitDigits is fpconv's emit_digits: value = digits × 10^K.
func emitDigits(b *strings.Builder, digits string, K int, neg bool) {
	ndigits := len(digits)
	exp := abs(K + ndigits - 1)

	// Plain integer.
	if K >= 0 && exp < ndigits+7 {
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", K))
		return
	}
	// Decimal without exponent.
	if K < 0 && (K > -7 || exp < 4) {
		offset := ndigits - abs(K)
		if offset <= 0 {
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -offset))
			b.WriteString(digits)
		} else {
			b.WriteString(digits[:offset])
			b.WriteByte('.')
			b.WriteString(digits[offset:])
		}
		return
	}
	// Scientific notation; fpconv caps the digits at 18 (17 when negative).
	maxd := 18
	if neg {
		maxd = 17
	}
	if ndigits > maxd {
		ndigits = maxd
	}
	b.WriteByte(digits[0])
	if ndigits > 1 {
		b.WriteByte('.')
		b.WriteString(digits[1:ndigits])
	}
	b.WriteByte('e')
	if K+ndigits-1 < 0 {
		b.WriteByte('-')
	} else {
		b.WriteByte('+')
	}
	// fpconv prints the exponent without leading zeros ("e+5", not "e+05").
	b.WriteString(strconv.Itoa(exp))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// d2string is Valkey's util.c d2string, used for double replies (ZSCORE,
// ZADD INCR, {double=...} from a script): "nan", "inf", "-inf", "0", "-0",
// an integer when exact, else fpconv.
func d2string(d float64) string {
	switch {
	case math.IsNaN(d):
		return "nan"
	case math.IsInf(d, 1):
		return "inf"
	case math.IsInf(d, -1):
		return "-inf"
	case d == 0:
		if math.Signbit(d) {
			return "-0"
		}
		return "0"
	}
	if ll, ok := double2ll(d); ok {
		return strconv.FormatInt(ll, 10)
	}
	return fpconvDtoa(d)
}

// luaArgString is how Valkey turns a Lua number passed to redis.call into
// a command argument (script_lua.c luaArgsToRedisArgv): integral values as
// integers, the rest via fpconv — not Lua's lossy "%.14g".
func luaArgString(d float64) string {
	if ll, ok := double2ll(d); ok {
		return strconv.FormatInt(ll, 10)
	}
	return fpconvDtoa(d)
}

// luaNumberToString is Lua 5.1's number formatting (LUA_NUMBER_FMT "%.14g"
// with glibc's spelling of the specials), used by tostring, error messages
// and redis.sha1hex.
func luaNumberToString(d float64) string {
	switch {
	case math.IsNaN(d):
		if math.Signbit(d) {
			return "-nan"
		}
		return "nan"
	case math.IsInf(d, 1):
		return "inf"
	case math.IsInf(d, -1):
		return "-inf"
	}
	return strconv.FormatFloat(d, 'g', 14, 64)
}

// luaToInteger is the C cast (long long)lua_Number that Valkey applies to a
// number a script returns: truncation toward zero, and on x86-64 the
// "integer indefinite" value INT64_MIN for NaN and out-of-range values.
func luaToInteger(d float64) int64 {
	if math.IsNaN(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(d)
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// strtod parses the longest prefix of s that glibc's strtod accepts:
// leading white space, sign, decimal or hexadecimal floats, "inf",
// "infinity" and "nan" in any case. It returns the value, the number of
// bytes consumed (0 when nothing parses) and whether the value
// overflowed or underflowed (strtod's ERANGE; gradual underflow to a
// subnormal is not reported, which is all the callers care about).
func strtod(s string) (val float64, n int, erange bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := strings.ToLower(s[i:])
	switch {
	case strings.HasPrefix(rest, "infinity"):
		return sign(math.Inf(1)), i + 8, false
	case strings.HasPrefix(rest, "inf"):
		return sign(math.Inf(1)), i + 3, false
	case strings.HasPrefix(rest, "nan"):
		j := i + 3
		if j < len(s) && s[j] == '(' {
			k := j + 1
			for k < len(s) && (isAlnum(s[k]) || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				j = k + 1
			}
		}
		return sign(math.NaN()), j, false
	}
	if len(rest) >= 2 && rest[0] == '0' && rest[1] == 'x' {
		if f, m, er, ok := parseHexFloat(s[i+2:]); ok {
			return sign(f), i + 2 + m, er
		}
		// "0x" with no hex digits: strtod reads the "0" alone.
		return sign(0), i + 1, false
	}
	start := i
	digits, nonzero := 0, false
	for i < len(s) && isDigit(s[i]) {
		nonzero = nonzero || s[i] != '0'
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			nonzero = nonzero || s[j] != '0'
			j++
			digits++
		}
		if digits > 0 {
			i = j
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	f, err := strconv.ParseFloat(s[start:i], 64)
	erange = err != nil || (f == 0 && nonzero)
	return sign(f), i, erange
}

// parseHexFloat parses the part of a C hex float after "0x".
func parseHexFloat(s string) (float64, int, bool, bool) {
	i := 0
	var mant strings.Builder
	digits, nonzero := 0, false
	for i < len(s) && isHex(s[i]) {
		mant.WriteByte(s[i])
		nonzero = nonzero || s[i] != '0'
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		j := i + 1
		var frac strings.Builder
		for j < len(s) && isHex(s[j]) {
			frac.WriteByte(s[j])
			nonzero = nonzero || s[j] != '0'
			j++
			digits++
		}
		if digits > 0 {
			i = j
			mant.WriteByte('.')
			mant.WriteString(frac.String())
		}
	}
	if digits == 0 {
		return 0, 0, false, false
	}
	exp := "p0"
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			exp = "p" + s[i+1:j]
			i = j
		}
	}
	m := mant.String()
	if strings.HasPrefix(m, ".") {
		m = "0" + m
	}
	f, err := strconv.ParseFloat("0x"+m+exp, 64)
	return f, i, err != nil || (f == 0 && nonzero), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
func isAlnum(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// string2d is Valkey's util.c string2d, the parser behind "value is not a
// valid float": the whole string must parse, no leading space, no NaN, and
// no overflow or underflow to zero.
func string2d(s string) (float64, bool) {
	if len(s) == 0 || isCSpace(s[0]) {
		return 0, false
	}
	// C sees a NUL-terminated string: an embedded NUL ends the number early
	// and so fails the length check below, as it does here.
	f, n, erange := strtod(s)
	if n != len(s) || math.IsNaN(f) {
		return 0, false
	}
	if erange && (math.IsInf(f, 0) || f == 0) {
		return 0, false
	}
	return f, true
}

// luaStr2Number is Lua 5.1's luaO_str2d, used by tonumber: strtod, then a
// hexadecimal integer if strtod stopped at an 'x', then only white space
// may follow.
func luaStr2Number(s string) (float64, bool) {
	if k := strings.IndexByte(s, 0); k >= 0 {
		s = s[:k] // C string
	}
	f, n, _ := strtod(s)
	if n == 0 {
		return 0, false
	}
	rest := s[n:]
	if len(rest) > 0 && (rest[0] == 'x' || rest[0] == 'X') {
		// glibc's strtod already reads hex floats, so this branch only runs
		// for inputs such as "0x" with no digits; strtoul then fails too.
		return 0, false
	}
	for _, c := range []byte(rest) {
		if !isCSpace(c) {
			return 0, false
		}
	}
	return f, true
}
