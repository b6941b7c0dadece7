package luaeval

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

// respConn is a raw RESP connection to a real server: the differential
// tests need the reply bytes exactly as sent, which a client library would
// parse away.
type respConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRESP(t *testing.T, addr string, proto int) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &respConn{c: c, br: bufio.NewReader(c)}
	if proto == 3 {
		if r := rc.do(t, "HELLO", "3"); r[0] != '%' {
			t.Fatalf("HELLO 3: %q", r)
		}
	}
	return rc
}

func encodeCommand(args []string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// do sends one command and returns the raw bytes of its reply.
func (rc *respConn) do(t *testing.T, args ...string) []byte {
	t.Helper()
	_ = rc.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := rc.c.Write(encodeCommand(args)); err != nil {
		t.Fatalf("write %q: %v", args, err)
	}
	var out bytes.Buffer
	if err := readRawReply(rc.br, &out); err != nil {
		t.Fatalf("read reply to %q: %v (so far %q)", args, err, out.Bytes())
	}
	return out.Bytes()
}

// readLine reads through the next CRLF. Only CRLF ends a line: Valkey can
// put a bare LF inside an error line (see TestDifferential "script errors
// keep newlines").
func readLine(br *bufio.Reader, out *bytes.Buffer) ([]byte, error) {
	start := out.Len()
	for {
		chunk, err := br.ReadBytes('\n')
		out.Write(chunk)
		if err != nil {
			return nil, err
		}
		line := out.Bytes()[start:]
		if bytes.HasSuffix(line, []byte("\r\n")) {
			return line[:len(line)-2], nil
		}
	}
}

// readRawReply copies one complete RESP2/RESP3 reply into out.
func readRawReply(br *bufio.Reader, out *bytes.Buffer) error {
	line, err := readLine(br, out)
	if err != nil {
		return err
	}
	if len(line) == 0 {
		return fmt.Errorf("empty line")
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		out.Write(buf)
		return nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readRawReply(br, out); err != nil {
				return err
			}
		}
		if line[0] == '|' { // an attribute precedes the reply it annotates
			return readRawReply(br, out)
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", line[0])
}
