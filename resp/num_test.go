package resp

import "testing"

// TestReplyInt: whole integer frames, RESP's sign rules, int64 bounds,
// and everything that is not an integer reply.
func TestReplyInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int64
		isOK bool
	}{
		{":1\r\n", 1, true},
		{":0\r\n", 0, true},
		{":-5\r\n", -5, true},
		{":123456789012345678\r\n", 123456789012345678, true},
		{":9223372036854775807\r\n", 9223372036854775807, true},
		{":-9223372036854775808\r\n", -9223372036854775808, true},
		{":9223372036854775808\r\n", 0, false}, // overflows
		{":12a\r\n", 0, false},
		{":-\r\n", 0, false},
		{":\r\n", 0, false},
		{":1\r", 0, false},
		{"$1\r\n1\r\n", 0, false},
		{"+OK\r\n", 0, false},
		{"", 0, false},
	} {
		n, ok := ReplyInt([]byte(c.in))
		if n != c.n || ok != c.isOK {
			t.Errorf("ReplyInt(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.isOK)
		}
	}
}
