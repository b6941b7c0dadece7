package proxy

import (
	"context"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/upstream"
)

// nodeDo sends cmds to addr in one write and returns their replies, on an
// idle connection of that node, protocol and login ("": the proxy's) or a
// new one (upstream.Plains).
func (p *Proxy) nodeDo(addr string, proto int, login string, cmds ...[]byte) ([][]byte, error) {
	dial := func() (net.Conn, error) {
		return p.nodeDial(addr, p.sharedState(poolKey{proto: proto, login: login}))
	}
	keep := func() bool { return !p.closed.Load() }
	return p.cl.conns.Do(upstream.PlainKey{Addr: addr, Proto: proto, Login: login}, dial, p.opts.Upstream.ReplyTimeout.D(), keep, cmds...)
}

// nodeDial opens a connection to a node as the shared connections are
// opened: TLS as configured, then the handshake st asks for (the proxy's
// login, lockproxy's scripts loaded unless st.Bare).
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
