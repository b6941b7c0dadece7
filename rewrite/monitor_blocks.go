package rewrite

// blocksBalanced reports whether a script's block keywords are balanced
// as in every Lua 5.1 chunk that compiles: read with Lua 5.1's lexer
// (strings, long brackets, comments, numerals), the count of openers
// (function, do, if, repeat) less closers (end, until) never drops below
// zero and ends at zero. (while and for open their block with do.)
//
// A function library's monitor (monitor_lib.go) puts the library's code
// inside "function(...) <code>\nend": code whose count drops below zero
// could close that function early and run its own code at the chunk's
// top, outside the sealed environment. Such code cannot compile on its
// own, so it is sent as it came, and Valkey answers its compile error.
// (An EVAL body needs no such check: it is the chunk's own top level,
// after the monitor's statement.)
func blocksBalanced(src string) bool {
	depth := 0
	i, n := 0, len(src)
	for i < n {
		c := src[i]
		switch {
		case c == '-' && i+1 < n && src[i+1] == '-':
			i += 2
			if lvl, ok := longOpen(src, i); ok {
				end, ok := longClose(src, i+lvl+2, lvl)
				if !ok {
					return false
				}
				i = end
				continue
			}
			for i < n && src[i] != '\n' && src[i] != '\r' {
				i++
			}
		case c == '[':
			if lvl, ok := longOpen(src, i); ok {
				end, ok := longClose(src, i+lvl+2, lvl)
				if !ok {
					return false
				}
				i = end
				continue
			}
			i++
		case c == '"' || c == '\'':
			i++
			for {
				if i >= n || src[i] == '\n' || src[i] == '\r' {
					return false // unfinished string
				}
				if src[i] == '\\' {
					i++
					// A escaped line break is one break: "\r\n" or
					// "\n\r" counts once, as inclinenumber reads it.
					if i+1 < n && (src[i] == '\n' && src[i+1] == '\r' || src[i] == '\r' && src[i+1] == '\n') {
						i++
					}
					i++
					continue
				}
				if src[i] == c {
					i++
					break
				}
				i++
			}
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(src[i+1])):
			// read_numeral: digits and dots, an exponent's sign, then
			// any alphanumerics and underscores.
			for i < n && (isDigit(src[i]) || src[i] == '.') {
				i++
			}
			if i < n && (src[i] == 'e' || src[i] == 'E') {
				i++
				if i < n && (src[i] == '+' || src[i] == '-') {
					i++
				}
			}
			for i < n && (isAlnum(src[i]) || src[i] == '_') {
				i++
			}
		case isAlpha(c) || c == '_':
			j := i
			for j < n && (isAlnum(src[j]) || src[j] == '_') {
				j++
			}
			switch src[i:j] {
			case "function", "do", "if", "repeat":
				depth++
			case "end", "until":
				depth--
				if depth < 0 {
					return false
				}
			}
			i = j
		default:
			i++
		}
	}
	return depth == 0
}

// longOpen: at src[i] a long bracket "[", "=" * level, "[" opens?
func longOpen(src string, i int) (int, bool) {
	if i >= len(src) || src[i] != '[' {
		return 0, false
	}
	j := i + 1
	for j < len(src) && src[j] == '=' {
		j++
	}
	if j < len(src) && src[j] == '[' {
		return j - i - 1, true
	}
	return 0, false
}

// longClose finds the "]", "=" * level, "]" that closes a long bracket,
// from i; it returns the index after it.
func longClose(src string, i, lvl int) (int, bool) {
	for ; i < len(src); i++ {
		if src[i] != ']' {
			continue
		}
		j := i + 1
		for j < len(src) && src[j] == '=' {
			j++
		}
		if j-i-1 == lvl && j < len(src) && src[j] == ']' {
			return j + 1, true
		}
	}
	return 0, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }
