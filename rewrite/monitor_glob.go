package rewrite

import (
	"strconv"
	"strings"
)

// luaGlob is a Lua pattern that matches every key a Valkey glob matches,
// anchored at both ends. It is exact but for classes ("[a-z]"), which
// become "." (any one byte): the monitor uses it where matching more keys
// than the glob only makes it stricter.
func luaGlob(glob string) string {
	var b strings.Builder
	b.WriteByte('^')
	star := false
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch c {
		case '*':
			if !star {
				b.WriteString(".*")
			}
			star = true
			continue
		case '?':
			b.WriteByte('.')
		case '[':
			// Valkey's class: up to the next unescaped ']' (or the
			// end, where an unterminated class takes the rest).
			j := i + 1
			for j < len(glob) && glob[j] != ']' {
				if glob[j] == '\\' {
					j++
				}
				j++
			}
			i = j
			b.WriteByte('.')
		case '\\':
			if i+1 < len(glob) {
				i++
				c = glob[i]
			}
			luaLit(&b, c)
		default:
			luaLit(&b, c)
		}
		star = false
	}
	b.WriteByte('$')
	return b.String()
}

// luaLit writes one byte as a Lua pattern matching exactly it.
func luaLit(b *strings.Builder, c byte) {
	switch {
	case c == 0:
		b.WriteString("%z")
	case c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9'):
		b.WriteByte(c)
	default:
		b.WriteByte('%')
		b.WriteByte(c)
	}
}

// luaQuote is s as a Lua string literal (any bytes).
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			s3 := strconv.Itoa(int(c))
			b.WriteString("\\" + strings.Repeat("0", 3-len(s3)) + s3)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
