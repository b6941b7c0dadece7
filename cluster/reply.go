package cluster

import (
	"bytes"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// The nodes' replies are folded as they came, never decoded and encoded
// again: an array reply is cut into its elements' bytes (Elements) and an
// array put together from elements already encoded (AppendArray).

// Elements splits an array reply into its elements' bytes, as they came;
// ok is false for anything but one whole array.
func Elements(r []byte) (els [][]byte, ok bool) {
	if len(r) == 0 || r[0] != '*' {
		return nil, false
	}
	hdr := bytes.IndexByte(r, '\n') + 1
	if hdr < 4 {
		return nil, false
	}
	n, err := strconv.Atoi(string(r[1 : hdr-2]))
	if err != nil || n < 0 {
		return nil, false
	}
	rest := r[hdr:]
	out := make([][]byte, 0, n)
	var f resp.Framer
	for range n {
		m, err := f.Frame(rest)
		if err != nil || m == 0 {
			return nil, false
		}
		out = append(out, rest[:m])
		rest = rest[m:]
	}
	return out, len(rest) == 0
}

// AppendArray appends an array of elements already encoded.
func AppendArray(dst []byte, els [][]byte) []byte {
	dst = resp.AppendArrayHeader(dst, len(els))
	for _, el := range els {
		dst = append(dst, el...)
	}
	return dst
}

// isError reports whether r is an error reply.
func isError(r []byte) bool { return len(r) > 0 && r[0] == '-' }
