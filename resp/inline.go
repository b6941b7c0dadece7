package resp

import "bytes"

// splitInline splits an inline command line exactly like Valkey's
// sdssplitargs, which is what decides what a hand-typed "SET a "b c"" means
// to the server. Arguments are appended unescaped to dst and the end offset
// of each is appended to ends. ok is false on unbalanced quotes (including a
// closing quote not followed by a blank), which Valkey reports as
// "unbalanced quotes in request".
//
// sdssplitargs walks a C string, so a NUL byte ends the line here too.
func splitInline(line, dst []byte, ends []int) (_ []byte, _ []int, ok bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	n := len(line)
	// at mimics reading a NUL-terminated string: past the end is '\0'.
	at := func(i int) byte {
		if i < n {
			return line[i]
		}
		return 0
	}
	p := 0
	for {
		for p < n && isSpace(line[p]) {
			p++
		}
		if p >= n {
			return dst, ends, true
		}
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					dst = append(dst, unhex(at(p+2))<<4|unhex(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					e := line[p]
					switch e {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					}
					dst = append(dst, e)
				case c == '"':
					// The closing quote must be followed by a blank or the end.
					if nx := at(p + 1); nx != 0 && !isSpace(nx) {
						return dst, ends, false
					}
					done = true
				case c == 0:
					return dst, ends, false
				default:
					// Copy the run of ordinary bytes in one go.
					j := p + 1
					for j < n && line[j] != '\\' && line[j] != '"' {
						j++
					}
					dst = append(dst, line[p:j]...)
					p = j - 1
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					dst = append(dst, '\'')
				case c == '\'':
					if nx := at(p + 1); nx != 0 && !isSpace(nx) {
						return dst, ends, false
					}
					done = true
				case c == 0:
					return dst, ends, false
				default:
					j := p + 1
					for j < n && line[j] != '\\' && line[j] != '\'' {
						j++
					}
					dst = append(dst, line[p:j]...)
					p = j - 1
				}
			default:
				// Only these end a bare token; '\v' and '\f' are skipped as
				// leading blanks but kept inside a token, as in sdssplitargs.
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					j := p + 1
					for j < n && !bareStop[line[j]] {
						j++
					}
					dst = append(dst, line[p:j]...)
					p = j - 1
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		ends = append(ends, len(dst))
	}
}

// bareStop marks the bytes that end a run of ordinary bytes in a bare
// token: its terminators and the quotes that switch mode.
var bareStop = [256]bool{' ': true, '\n': true, '\r': true, '\t': true, 0: true, '"': true, '\'': true}

// isSpace is C isspace in the "C" locale; bytes >= 0x80 are not blanks.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
