package proxy

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// nodeConn is a plain request-reply connection to one cluster node, logged
// in with the proxy's credentials, for the rare paths that wait for their
// reply: reading the topology, following a redirect, and the parts of a
// command split across slots. Commands of the hot path use the shared pools.
type nodeConn struct {
	nc  net.Conn
	buf []byte
	f   resp.Framer
}

// nodeKey names the idle connections one node, protocol and login can
// reuse: a reply is shaped by the protocol, so a RESP3 client's redirected
// command must run on a RESP3 connection, and a client's own login's
// commands on a connection logged in as it (logins.go).
type nodeKey struct {
	addr  string
	proto int
	login string
}

// nodeConns keeps a few idle nodeConns per node and protocol.
type nodeConns struct {
	mu   sync.Mutex
	idle map[nodeKey][]*nodeConn
}

const maxIdleNodeConns = 4

// nodeDo sends cmds to addr in one write and returns their replies, on an
// idle connection of that node, protocol and login ("": the proxy's) or a
// new one.
func (p *Proxy) nodeDo(addr string, proto int, login string, cmds ...[]byte) ([][]byte, error) {
	cl := p.cl
	k := nodeKey{addr, proto, login}
	cl.conns.mu.Lock()
	var c *nodeConn
	if l := cl.conns.idle[k]; len(l) > 0 {
		c = l[len(l)-1]
		cl.conns.idle[k] = l[:len(l)-1]
	}
	cl.conns.mu.Unlock()
	if c == nil {
		nc, err := p.nodeDial(addr, p.sharedState(poolKey{proto: proto, login: login}))
		if err != nil {
			return nil, err
		}
		c = &nodeConn{nc: nc}
	}
	replies, err := c.do(cmds, p.opts.Upstream.ReplyTimeout.D())
	if err != nil {
		c.nc.Close()
		return nil, err
	}
	cl.conns.mu.Lock()
	if len(cl.conns.idle[k]) < maxIdleNodeConns && !p.closed.Load() {
		cl.conns.idle[k] = append(cl.conns.idle[k], c)
		c = nil
	}
	cl.conns.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
	return replies, nil
}

// nodeDial opens a connection to a node as the shared connections are
// opened: TLS as configured, then the handshake st asks for (the proxy's
// login, lockproxy's scripts loaded unless st.bare).
func (p *Proxy) nodeDial(addr string, st upstream.State) (net.Conn, error) {
	nc, err := p.dialer.Dial(context.Background(), addr)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(p.opts.Upstream.DialTimeout.D()))
	if err := p.handshake(nc, st); err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, nil
}

// do writes cmds and reads one reply for each, each reply its own slice.
func (c *nodeConn) do(cmds [][]byte, timeout time.Duration) ([][]byte, error) {
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

func (n *nodeConns) closeAll() {
	n.mu.Lock()
	idle := n.idle
	n.idle = map[nodeKey][]*nodeConn{}
	n.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.nc.Close()
		}
	}
}
