package policy

import "strings"

// Example is a key the pattern matches, for a probe (check-config's lock
// cycle): every * and ? becomes text of its own, a class its first
// character. A negated class becomes text too, which may not match:
// Match decides.
func (p *Pattern) Example() string {
	pattern := p.src
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString("lockproxy-check-upstream")
		case '?':
			b.WriteByte('x')
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		case '[':
			j := i + 1
			if j < len(pattern) && (pattern[j] == '^' || pattern[j] == '!') {
				b.WriteString("lockproxy-check-upstream") // a negated class: let Match decide
				for j < len(pattern) && pattern[j] != ']' {
					j++
				}
				i = j
				continue
			}
			if j < len(pattern) {
				b.WriteByte(pattern[j])
			}
			for j < len(pattern) && pattern[j] != ']' {
				j++
			}
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
