package luaeval

import (
	"strconv"
)

// kind is the type of one reply node. Commands build a tree of replies
// rather than bytes because the same reply is consumed three ways: encoded
// for a RESP2 client, encoded for a RESP3 client, and converted into Lua
// values for redis.call (under the script's own protocol, see
// redis.setresp).
type kind uint8

const (
	kStatus    kind = iota // +s
	kError                 // -s (s holds the text after '-', verbatim)
	kInt                   // :n
	kBulk                  // $len s
	kNull                  // null bulk: $-1 in RESP2, _ in RESP3
	kNullArray             // null array: *-1 in RESP2, _ in RESP3
	kArray                 // *n
	kMap                   // %n in RESP3; a flat *2n array in RESP2
	kSet                   // ~n in RESP3; an array in RESP2
	kDouble                // ,d in RESP3; a bulk string in RESP2
	kBool                  // #t/#f in RESP3; :1/:0 in RESP2
	kBigNum                // (n in RESP3; a bulk string in RESP2
	kVerbatim              // =len fmt:s in RESP3; a bulk string in RESP2
)

// reply is one node of a reply tree.
type reply struct {
	k     kind
	s     string  // status, error, bulk, big number and verbatim text
	n     int64   // integer
	f     float64 // double
	b     bool    // boolean
	vfmt  string  // verbatim format (three letters, e.g. "txt")
	elems []reply // array and set elements; map keys and values alternate
}

func statusReply(s string) reply  { return reply{k: kStatus, s: s} }
func errorReply(s string) reply   { return reply{k: kError, s: s} }
func intReply(n int64) reply      { return reply{k: kInt, n: n} }
func bulkReply(s string) reply    { return reply{k: kBulk, s: s} }
func nullReply() reply            { return reply{k: kNull} }
func arrayReply(e []reply) reply  { return reply{k: kArray, elems: e} }
func doubleReply(f float64) reply { return reply{k: kDouble, f: f} }

var okReply = statusReply("OK")

func (r reply) isError() bool { return r.k == kError }

// appendReply encodes r for a client speaking protocol proto (2 or 3).
// Error text is written verbatim: every place that builds an error reply
// applies (or, like Valkey, deliberately does not apply) its own CR/LF
// sanitising, so the encoder must not second-guess it.
func appendReply(dst []byte, r reply, proto int) []byte {
	switch r.k {
	case kStatus:
		dst = append(dst, '+')
		dst = append(dst, r.s...)
		return append(dst, '\r', '\n')
	case kError:
		dst = append(dst, '-')
		dst = append(dst, r.s...)
		return append(dst, '\r', '\n')
	case kInt:
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, r.n, 10)
		return append(dst, '\r', '\n')
	case kBulk:
		return appendBulk(dst, r.s)
	case kNull:
		if proto >= 3 {
			return append(dst, "_\r\n"...)
		}
		return append(dst, "$-1\r\n"...)
	case kNullArray:
		if proto >= 3 {
			return append(dst, "_\r\n"...)
		}
		return append(dst, "*-1\r\n"...)
	case kArray, kSet:
		if r.k == kSet && proto >= 3 {
			dst = append(dst, '~')
		} else {
			dst = append(dst, '*')
		}
		dst = strconv.AppendInt(dst, int64(len(r.elems)), 10)
		dst = append(dst, '\r', '\n')
		for _, e := range r.elems {
			dst = appendReply(dst, e, proto)
		}
		return dst
	case kMap:
		if proto >= 3 {
			dst = append(dst, '%')
			dst = strconv.AppendInt(dst, int64(len(r.elems)/2), 10)
		} else {
			dst = append(dst, '*')
			dst = strconv.AppendInt(dst, int64(len(r.elems)), 10)
		}
		dst = append(dst, '\r', '\n')
		for _, e := range r.elems {
			dst = appendReply(dst, e, proto)
		}
		return dst
	case kDouble:
		if proto >= 3 {
			dst = append(dst, ',')
			dst = append(dst, d2string(r.f)...)
			return append(dst, '\r', '\n')
		}
		return appendBulk(dst, d2string(r.f))
	case kBool:
		if proto >= 3 {
			if r.b {
				return append(dst, "#t\r\n"...)
			}
			return append(dst, "#f\r\n"...)
		}
		if r.b {
			return append(dst, ":1\r\n"...)
		}
		return append(dst, ":0\r\n"...)
	case kBigNum:
		if proto >= 3 {
			dst = append(dst, '(')
			dst = append(dst, r.s...)
			return append(dst, '\r', '\n')
		}
		return appendBulk(dst, r.s)
	case kVerbatim:
		if proto >= 3 {
			dst = append(dst, '=')
			dst = strconv.AppendInt(dst, int64(len(r.s)+4), 10)
			dst = append(dst, '\r', '\n')
			dst = append(dst, r.vfmt...)
			dst = append(dst, ':')
			dst = append(dst, r.s...)
			return append(dst, '\r', '\n')
		}
		return appendBulk(dst, r.s)
	}
	panic("luaeval: unknown reply kind")
}

func appendBulk(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}
