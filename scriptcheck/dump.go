package scriptcheck

import "encoding/binary"

// DumpLibraries reads the library bodies out of a FUNCTION DUMP payload
// (what FUNCTION RESTORE takes): a sequence of RDB function entries
// (opcode 245, then the library's code as an RDB string, possibly LZF
// compressed), then the RDB version (2 bytes) and a CRC64 (8 bytes). ok is
// false for anything else; the caller then cannot know which functions
// the payload defines.
func DumpLibraries(payload []byte) (bodies []string, ok bool) {
	if len(payload) < 10 {
		return nil, false
	}
	p := payload[:len(payload)-10]
	for len(p) > 0 {
		if p[0] != rdbOpcodeFunction2 {
			return nil, false
		}
		s, rest, ok := rdbString(p[1:])
		if !ok {
			return nil, false
		}
		bodies = append(bodies, s)
		p = rest
	}
	return bodies, true
}

const rdbOpcodeFunction2 = 245

// rdbLen reads an RDB length; enc reports a special encoding (its type
// in n).
func rdbLen(p []byte) (n uint64, enc bool, rest []byte, ok bool) {
	if len(p) == 0 {
		return 0, false, nil, false
	}
	switch p[0] >> 6 {
	case 0:
		return uint64(p[0] & 0x3f), false, p[1:], true
	case 1:
		if len(p) < 2 {
			return 0, false, nil, false
		}
		return uint64(p[0]&0x3f)<<8 | uint64(p[1]), false, p[2:], true
	case 3:
		return uint64(p[0] & 0x3f), true, p[1:], true
	}
	switch p[0] {
	case 0x80:
		if len(p) < 5 {
			return 0, false, nil, false
		}
		return uint64(binary.BigEndian.Uint32(p[1:])), false, p[5:], true
	case 0x81:
		if len(p) < 9 {
			return 0, false, nil, false
		}
		return binary.BigEndian.Uint64(p[1:]), false, p[9:], true
	}
	return 0, false, nil, false
}

// rdbString reads an RDB string: raw, an integer, or LZF compressed.
func rdbString(p []byte) (string, []byte, bool) {
	n, enc, p, ok := rdbLen(p)
	if !ok {
		return "", nil, false
	}
	if !enc {
		if uint64(len(p)) < n {
			return "", nil, false
		}
		return string(p[:n]), p[n:], true
	}
	switch n {
	case 0, 1, 2: // int8, int16, int32: no library body is a number
		return "", nil, false
	case 3:
		clen, e1, p, ok1 := rdbLen(p)
		ulen, e2, p, ok2 := rdbLen(p)
		if !ok1 || !ok2 || e1 || e2 || uint64(len(p)) < clen || ulen > 64<<20 {
			return "", nil, false
		}
		out, ok := lzf(p[:clen], int(ulen))
		if !ok {
			return "", nil, false
		}
		return string(out), p[clen:], true
	}
	return "", nil, false
}

// lzf decompresses LZF data of a known size (liblzf's format, as RDB
// stores compressed strings).
func lzf(in []byte, size int) ([]byte, bool) {
	out := make([]byte, 0, size)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			n := ctrl + 1
			if i+n > len(in) || len(out)+n > size {
				return nil, false
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if i >= len(in) {
				return nil, false
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		n += 2
		if ref < 0 || len(out)+n > size {
			return nil, false
		}
		for j := 0; j < n; j++ {
			out = append(out, out[ref+j])
		}
	}
	return out, len(out) == size
}
