package main

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// rawConn is one RESP2 connection that sends command lines as they were
// generated and returns the reply's bytes, each exchange under a deadline
// (a line that blocks, or a server that stopped, ends in an error).
type rawConn struct {
	nc net.Conn
	br *bufio.Reader
}

// replyTimeout bounds one exchange; generous, since the machine may be
// loaded, and blocking commands are generated with short timeouts.
const replyTimeout = 3 * time.Second

func dialRaw(addr string) (*rawConn, error) {
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &rawConn{nc: nc, br: bufio.NewReader(nc)}, nil
}

func (c *rawConn) do(args ...string) ([]byte, error) {
	_ = c.nc.SetDeadline(time.Now().Add(replyTimeout))
	if _, err := c.nc.Write(valkeytest.Command(args...)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err := valkeytest.ReadReply(c.br, &out)
	return out.Bytes(), err
}

func (c *rawConn) close() { c.nc.Close() }

// isError reports an error reply.
func isError(r []byte) bool { return len(r) > 0 && r[0] == '-' }

// errCode is an error reply's first word ("ERR", "NOTOWNER" ...).
func errCode(r []byte) string {
	if !isError(r) {
		return ""
	}
	s := string(r[1:])
	if i := bytes.IndexAny([]byte(s), " \r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// short is a reply cut for a report line.
func short(r []byte) string {
	r = bytes.TrimRight(r, "\r\n")
	if len(r) > 100 {
		return strconv.Quote(string(r[:100])) + "..."
	}
	return strconv.Quote(string(r))
}
