package resp

import (
	"bytes"
	"testing"
)

// A clone keeps the command's bytes when the buffer it was read from is
// written over, and appending to one of its arguments does not reach the
// next.
func TestCommandClone(t *testing.T) {
	buf := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n")
	in := Command{Raw: buf, Args: [][]byte{buf[8:11:11], buf[17:18:18], buf[24:29:29]}}
	c := in.Clone()
	for i := range buf {
		buf[i] = 'x'
	}
	if string(c.Raw) != "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n" {
		t.Fatalf("raw %q", c.Raw)
	}
	if len(c.Args) != 3 || string(c.Args[0]) != "SET" || string(c.Args[1]) != "k" || string(c.Args[2]) != "hello" {
		t.Fatalf("args %q", c.Args)
	}
	_ = append(c.Args[1], 'z')
	if string(c.Args[2]) != "hello" || !bytes.HasSuffix(c.Raw, []byte("hello\r\n")) {
		t.Fatalf("an append to an argument overwrote the next: %q %q", c.Args, c.Raw)
	}
	if e := (Command{}).Clone(); len(e.Raw) != 0 || len(e.Args) != 0 {
		t.Fatalf("empty: %+v", e)
	}
}
