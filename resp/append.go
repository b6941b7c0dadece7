package resp

import "strconv"

// appendLen appends a type byte, a decimal number and CRLF: every RESP
// header has this shape.
func appendLen(dst []byte, t byte, n int64) []byte {
	dst = append(dst, t)
	if n >= 0 && n < 10 {
		dst = append(dst, byte('0'+n))
	} else {
		dst = strconv.AppendInt(dst, n, 10)
	}
	return append(dst, '\r', '\n')
}

// AppendCommand appends args as a RESP array of bulk strings, the form
// every command takes on its way upstream.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = appendLen(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = AppendBulk(dst, a)
	}
	return dst
}

// AppendCommandStrings is AppendCommand for string arguments.
func AppendCommandStrings(dst []byte, args ...string) []byte {
	dst = appendLen(dst, '*', int64(len(args)))
	for _, a := range args {
		dst = AppendBulkString(dst, a)
	}
	return dst
}

// AppendError appends "-msg\r\n". msg carries its own code ("ERR ...",
// "WRONGTYPE ..."). CR and LF become spaces, as in Valkey's addReplyError,
// because either would end the line early and desynchronise the client.
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, '-')
	dst = appendLine(dst, msg)
	return append(dst, '\r', '\n')
}

// AppendSimple appends "+s\r\n"; CR and LF in s become spaces, for the same
// reason as in AppendError.
func AppendSimple(dst []byte, s string) []byte {
	dst = append(dst, '+')
	dst = appendLine(dst, s)
	return append(dst, '\r', '\n')
}

func appendLine(dst []byte, s string) []byte {
	start := len(dst)
	dst = append(dst, s...)
	for i := start; i < len(dst); i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	return dst
}

// AppendInt appends ":n\r\n".
func AppendInt(dst []byte, n int64) []byte { return appendLen(dst, ':', n) }

// AppendBulk appends b as a bulk string. A nil b is an empty string, not a
// null: use AppendNull for that.
func AppendBulk(dst []byte, b []byte) []byte {
	dst = appendLen(dst, '$', int64(len(b)))
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString is AppendBulk for a string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = appendLen(dst, '$', int64(len(s)))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendText appends text as Valkey answers INFO, CLIENT INFO and CLIENT
// LIST: a bulk string in RESP2, a verbatim string of format txt in RESP3.
func AppendText(dst, text []byte, proto int) []byte {
	if proto < 3 {
		return AppendBulk(dst, text)
	}
	dst = appendLen(dst, '=', int64(len(text)+4))
	dst = append(dst, "txt:"...)
	dst = append(dst, text...)
	return append(dst, '\r', '\n')
}

// AppendNull appends the null of the client's protocol: "$-1" for RESP2,
// "_" for RESP3.
func AppendNull(dst []byte, proto int) []byte {
	if proto >= 3 {
		return append(dst, '_', '\r', '\n')
	}
	return append(dst, '$', '-', '1', '\r', '\n')
}

// AppendArrayHeader appends "*n\r\n"; the caller appends the n elements.
func AppendArrayHeader(dst []byte, n int) []byte { return appendLen(dst, '*', int64(n)) }

// AppendMapHeader appends a header for n key/value pairs: "%n" for RESP3,
// a flat array of 2n elements for RESP2, as Valkey's addReplyMapLen does.
func AppendMapHeader(dst []byte, n int, proto int) []byte {
	if proto >= 3 {
		return appendLen(dst, '%', int64(n))
	}
	return appendLen(dst, '*', 2*int64(n))
}

// AppendSetHeader appends a header for a set of n elements: "~n" for RESP3,
// "*n" for RESP2.
func AppendSetHeader(dst []byte, n int, proto int) []byte {
	if proto >= 3 {
		return appendLen(dst, '~', int64(n))
	}
	return appendLen(dst, '*', int64(n))
}

// AppendPushHeader appends a header for an out-of-band message of n
// elements: ">n" for RESP3, "*n" for RESP2 (how Valkey sends pub/sub
// messages to RESP2 clients).
func AppendPushHeader(dst []byte, n int, proto int) []byte {
	if proto >= 3 {
		return appendLen(dst, '>', int64(n))
	}
	return appendLen(dst, '*', int64(n))
}
