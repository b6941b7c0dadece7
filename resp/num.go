package resp

import "math"

// parseLL is Valkey's string2ll: an optional '-', no '+', no leading zeros
// ("0" alone is fine, "-0" is not), no blanks, fewer than 21 bytes, and the
// value must fit in an int64. Client lengths are judged by these rules so a
// header Valkey would reject is rejected here with the same message.
func parseLL(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n >= 21 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i := 0
	neg := b[0] == '-'
	if neg {
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	v := uint64(b[i] - '0')
	for i++; i < n; i++ {
		c := b[i] - '0'
		if c > 9 {
			return 0, false
		}
		// 19 digits can not overflow a uint64; only the 20th needs checks.
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c) {
			return 0, false
		}
		v += uint64(c)
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parseReplyInt reads a RESP ':' payload. Replies come from the server, so
// this follows the RESP spec (optional sign, leading zeros allowed) rather
// than string2ll.
func parseReplyInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	i := 0
	neg := false
	switch b[0] {
	case '-':
		neg, i = true, 1
	case '+':
		i = 1
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			return 0, false
		}
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(c)
		if v > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ReplyInt reads a whole integer reply frame (":N\r\n"): the number and
// whether reply is one. It does not allocate.
func ReplyInt(reply []byte) (int64, bool) {
	if len(reply) < 4 || reply[0] != ':' || reply[len(reply)-2] != '\r' || reply[len(reply)-1] != '\n' {
		return 0, false
	}
	return parseReplyInt(reply[1 : len(reply)-2])
}

// maxCountDigits bounds reply lengths and element counts to 16 digits
// (< 2^54): far beyond anything a server sends, and small enough that
// position arithmetic (pos+n+2, 2n+1) can never overflow.
const maxCountDigits = 16

// parseCount reads a reply length or element count: plain digits only.
// A null (-1) is handled by the caller before this.
func parseCount(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxCountDigits {
		return 0, false
	}
	var v int64
	for _, c := range b {
		c -= '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + int64(c)
	}
	return v, true
}

// isDouble accepts what Valkey's addReplyDouble can produce ("inf", "-inf",
// "nan", or a %.17g-style number) plus other spellings RESP3 allows; it only
// rejects payloads that can not be a double at all.
func isDouble(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9', c == '.', c == '-', c == '+', c == 'e', c == 'E':
		case c == 'i', c == 'n', c == 'f', c == 'a', c == 'I', c == 'N', c == 'F', c == 'A':
		default:
			return false
		}
	}
	return true
}
