package proxy

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// dial connects to Valkey and replays st on the new connection.
func (p *Proxy) dial(st upstream.State, owner *session) (*upstream.Conn, error) {
	nc, addr, err := p.connect(st)
	if err != nil {
		return nil, err
	}
	return p.startUp(nc, addr, owner, nil), nil
}

// startUp makes a connection connect set up an upstream.Conn, and starts
// its reader and writer: an event loop reads a shared connection, a
// goroutine of its own any other.
func (p *Proxy) startUp(nc net.Conn, addr string, owner *session, relay func([]byte)) *upstream.Conn {
	var o upstream.Owner
	if owner != nil {
		o = owner // never a nil *session in the interface
	}
	c := upstream.New(&p.up, nc, addr, o, relay)
	if c.Loopable() {
		if lp := p.loops.Upstream(); lp != nil {
			lp.AddUp(c)
		}
	}
	c.Start()
	return c
}

// connect opens a connection to Valkey (the primary now, with Sentinel) and
// replays st on it.
func (p *Proxy) connect(st upstream.State) (net.Conn, string, error) {
	addr, err := p.upstreamAddr()
	if st.Node != "" {
		addr, err = st.Node, nil
	}
	if err != nil {
		return nil, "", err
	}
	nc, err := p.dialer.Dial(context.Background(), addr)
	if err != nil {
		p.forgetMaster()
		return nil, "", &upstream.NodeError{Addr: addr, Err: err}
	}
	// Connected: Valkey is there. Its answers may wait behind a long
	// command (SAVE, DEBUG SLEEP), so they get as long as any reply.
	_ = nc.SetDeadline(time.Now().Add(max(p.opts.Upstream.DialTimeout.D(), p.opts.Upstream.ReplyTimeout.D())))
	err = p.handshake(nc, st)
	if err == nil && !st.Bare {
		err = p.learnEpoch(nc, st.DB)
	}
	if err != nil {
		nc.Close()
		var re *upstream.ReplyError
		switch {
		case errors.As(err, &re):
		case p.upstreamTLS() == nil && p.dialer.SpeaksTLS(addr):
			err = upstream.ErrPlaintextToTLS(addr)
		case upstream.IsTimeout(err):
			err = &upstream.SlowError{Wait: max(p.opts.Upstream.DialTimeout.D(), p.opts.Upstream.ReplyTimeout.D())}
		}
		return nil, "", &upstream.NodeError{Addr: addr, Err: err}
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, addr, nil
}

// handshake replays st on nc (upstream.Handshake) with lockproxy's own
// scripts, keeping its commands out of MONITOR (clients.OwnLines).
func (p *Proxy) handshake(nc net.Conn, st upstream.State) error {
	return upstream.Handshake(nc, st, scriptBodies, p.own.Handshake)
}

// scriptBodies are the scripts every connection loads (unless bare).
var scriptBodies = func() []string {
	var b []string
	for _, sc := range rewrite.Scripts {
		b = append(b, sc.Body)
	}
	return b
}()
