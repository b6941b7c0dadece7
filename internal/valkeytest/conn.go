package valkeytest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// Conn is a raw RESP connection for tests that need reply bytes exactly as
// the server sent them, which a client library would parse away. It knows
// nothing of lockproxy (package resp's own tests use it too).
type Conn struct {
	nc net.Conn
	br *bufio.Reader
}

// Dial connects to addr; with proto 3 it sends HELLO 3 first.
func Dial(tb testing.TB, addr string, proto int) *Conn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		tb.Fatalf("valkeytest: dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { nc.Close() })
	c := &Conn{nc: nc, br: bufio.NewReader(nc)}
	if proto == 3 {
		if r := c.Do(tb, "HELLO", "3"); r[0] != '%' {
			tb.Fatalf("valkeytest: HELLO 3: %q", r)
		}
	}
	return c
}

// Do sends one command and returns the bytes of its reply.
func (c *Conn) Do(tb testing.TB, args ...string) []byte {
	tb.Helper()
	_ = c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(Command(args...)); err != nil {
		tb.Fatalf("valkeytest: write %q: %v", args, err)
	}
	var out bytes.Buffer
	if err := ReadReply(c.br, &out); err != nil {
		tb.Fatalf("valkeytest: read reply to %q: %v (so far %q)", args, err, out.Bytes())
	}
	return out.Bytes()
}

// Command encodes args as a RESP array of bulk strings.
func Command(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// ReadReply copies one complete RESP2/RESP3 reply from br into out. Only
// CRLF ends a line: Valkey can put a bare LF inside an error line (a script's
// error text is sent as it is).
func ReadReply(br *bufio.Reader, out *bytes.Buffer) error {
	start := out.Len()
	for {
		chunk, err := br.ReadBytes('\n')
		out.Write(chunk)
		if err != nil {
			return err
		}
		if bytes.HasSuffix(out.Bytes()[start:], []byte("\r\n")) {
			break
		}
	}
	line := out.Bytes()[start : out.Len()-2]
	if len(line) == 0 {
		return fmt.Errorf("empty line")
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n < 0 {
			return err
		}
		_, err = io.CopyN(out, br, int64(n)+2)
		return err
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := ReadReply(br, out); err != nil {
				return err
			}
		}
		if line[0] == '|' { // an attribute precedes the reply it annotates
			return ReadReply(br, out)
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", line[0])
}
