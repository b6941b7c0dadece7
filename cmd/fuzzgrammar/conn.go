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
	nc      net.Conn
	br      *bufio.Reader
	timeout time.Duration // of each exchange; replyTimeout when zero
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
	t := c.timeout
	if t == 0 {
		t = replyTimeout
	}
	_ = c.nc.SetDeadline(time.Now().Add(t))
	if _, err := c.nc.Write(valkeytest.Command(args...)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err := valkeytest.ReadReply(c.br, &out)
	return out.Bytes(), err
}

func (c *rawConn) close() { c.nc.Close() }

// timeoutFor is how long a line of the command may take: SYNC and PSYNC
// answer with a bulk that the replication stream follows without its
// CRLF, so their reply never ends; they get a short wait.
func timeoutFor(name string) time.Duration {
	if name == "SYNC" || name == "PSYNC" {
		return 500 * time.Millisecond
	}
	return replyTimeout
}

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
