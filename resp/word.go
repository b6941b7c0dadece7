package resp

// EqualFold reports whether b equals the lower-case ASCII word lower in any
// letter case: command names and option words ("set", "nx") as clients send
// them. It does not allocate.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
