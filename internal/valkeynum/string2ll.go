package valkeynum

import "math"

// String2ll parses s exactly as Valkey's string2ll (util.c): an optional
// '-', no '+', no leading zeros ("0" alone is zero, "-0" is refused), no
// spaces, fewer than 21 bytes, within int64. Every "value is not an integer
// or out of range" in Valkey comes from it.
func String2ll[T ~string | ~[]byte](s T) (int64, bool) {
	if len(s) == 0 || len(s) >= 21 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	p := 0
	neg := false
	if s[0] == '-' {
		neg = true
		p++
		if p == len(s) {
			return 0, false
		}
	}
	if s[p] < '1' || s[p] > '9' {
		return 0, false
	}
	var v uint64
	for ; p < len(s); p++ {
		c := s[p]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if neg {
		if v > uint64(math.MaxInt64)+1 {
			return 0, false
		}
		return -int64(v), true // -(1<<63) wraps to itself, which is right
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}
