package upstream

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// A plain connection is request-reply: written to and read by whoever
// waits for its replies, for the rare paths that may wait (in front of a
// cluster: reading the topology, following a redirect, the parts of a
// command split across slots). Commands of the hot path use the pools.

// PlainKey names the idle plain connections a node, protocol and login can
// reuse: a reply is shaped by the protocol, and a client's own login's
// commands run on a connection logged in as it ("": the proxy's).
type PlainKey struct {
	Addr  string
	Proto int
	Login string
}

// Plains keeps a few idle plain connections per key.
type Plains struct {
	mu   sync.Mutex
	idle map[PlainKey][]*plain
}

const maxIdlePlains = 4

type plain struct {
	nc  net.Conn
	buf []byte
	f   resp.Framer
}

// Do sends cmds in one write on an idle connection of k, or on one dial
// opens (logged in and set up for k), and returns their replies, each its
// own slice, within timeout. The connection is kept for the next unless
// keep reports false (shutting down) or enough are idle.
func (n *Plains) Do(k PlainKey, dial func() (net.Conn, error), timeout time.Duration, keep func() bool, cmds ...[]byte) ([][]byte, error) {
	n.mu.Lock()
	var c *plain
	if l := n.idle[k]; len(l) > 0 {
		c = l[len(l)-1]
		n.idle[k] = l[:len(l)-1]
	}
	n.mu.Unlock()
	if c == nil {
		nc, err := dial()
		if err != nil {
			return nil, err
		}
		c = &plain{nc: nc}
	}
	replies, err := c.do(cmds, timeout)
	if err != nil {
		c.nc.Close()
		return nil, err
	}
	n.mu.Lock()
	if len(n.idle[k]) < maxIdlePlains && keep() {
		if n.idle == nil {
			n.idle = map[PlainKey][]*plain{}
		}
		n.idle[k] = append(n.idle[k], c)
		c = nil
	}
	n.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
	return replies, nil
}

// do writes cmds and reads one reply for each, each reply its own slice.
func (c *plain) do(cmds [][]byte, timeout time.Duration) ([][]byte, error) {
	_ = c.nc.SetDeadline(time.Now().Add(timeout))
	var out []byte
	for _, cmd := range cmds {
		out = append(out, cmd...)
	}
	if _, err := c.nc.Write(out); err != nil {
		return nil, err
	}
	replies := make([][]byte, 0, len(cmds))
	for len(replies) < len(cmds) {
		n, err := c.f.Frame(c.buf)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			replies = append(replies, append([]byte(nil), c.buf[:n]...))
			c.buf = append(c.buf[:0], c.buf[n:]...)
			continue
		}
		if len(c.buf) == cap(c.buf) {
			c.buf = append(c.buf, make([]byte, max(4096, len(c.buf)))...)[:len(c.buf)]
		}
		m, err := c.nc.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+m]
		if err != nil && m == 0 {
			return nil, err
		}
	}
	if len(c.buf) > 0 {
		return nil, errors.New("a reply came from Valkey that no command was waiting for")
	}
	_ = c.nc.SetDeadline(time.Time{})
	return replies, nil
}

// CloseAll closes every idle connection.
func (n *Plains) CloseAll() {
	n.mu.Lock()
	idle := n.idle
	n.idle = nil
	n.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.nc.Close()
		}
	}
}
