package upstream

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// Connector opens the proxy's connections to Valkey: to where Target says,
// through Dialer, each made equal to its State at connect (Handshake, then
// Learn unless bare), and once set up started with Host; a connection an
// event loop may read is handed to Attach. It keeps the upstream's Health.
// Filled in once, before the first connection opens.
type Connector struct {
	Target Target
	Dialer *Dialer
	Host   *Host
	Health Health
	// Wait bounds the set-up's answers once connected: they may wait
	// behind a long command (SAVE, DEBUG SLEEP), so the longer of
	// dial_timeout and reply_timeout.
	Wait time.Duration
	// Handshake makes nc equal to st (Handshake with the proxy's scripts,
	// its commands kept out of MONITOR).
	Handshake func(nc net.Conn, st State) error
	// Learn runs on a new connection after its handshake unless st.Bare
	// (the proxy learns the primary's epoch there).
	Learn func(nc net.Conn, st State) error
	// Attach hands a connection an event loop may read (Conn.Loopable)
	// to one, when there is one.
	Attach func(c *Conn)
}

// Connect opens a connection to Valkey (st.Node, else where Target says)
// and makes it equal to st. A failed dial makes Target ask again. Its
// errors are NodeErrors naming the address; a connection that speaks TLS
// where plaintext was configured says so, and a set-up past Wait is a
// SlowError.
func (k *Connector) Connect(st State) (net.Conn, string, error) {
	addr, err := k.Target.Where()
	if st.Node != "" {
		addr, err = st.Node, nil
	}
	if err != nil {
		return nil, "", err
	}
	nc, err := k.Dialer.Dial(context.Background(), addr)
	if err != nil {
		k.Target.Forget()
		return nil, "", &NodeError{Addr: addr, Err: err}
	}
	_ = nc.SetDeadline(time.Now().Add(k.Wait))
	err = k.Handshake(nc, st)
	if err == nil && !st.Bare {
		err = k.Learn(nc, st)
	}
	if err != nil {
		nc.Close()
		var re *ReplyError
		switch {
		case errors.As(err, &re):
		case k.Dialer.TLS() == nil && k.Dialer.SpeaksTLS(addr):
			err = ErrPlaintextToTLS(addr)
		case IsTimeout(err):
			err = &SlowError{Wait: k.Wait}
		}
		return nil, "", &NodeError{Addr: addr, Err: err}
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, addr, nil
}

// Start sets up a Conn on nc, a connection Connect opened to addr, and
// starts its reader and writer: an event loop reads a shared connection
// (Attach), a goroutine of its own any other.
func (k *Connector) Start(nc net.Conn, addr string, owner Owner, relay func([]byte)) *Conn {
	c := New(k.Host, nc, addr, owner, relay)
	if c.Loopable() {
		k.Attach(c)
	}
	c.Start()
	return c
}

// Dial connects (Connect) and starts the connection (Start).
func (k *Connector) Dial(st State, owner Owner) (*Conn, error) {
	nc, addr, err := k.Connect(st)
	if err != nil {
		return nil, err
	}
	return k.Start(nc, addr, owner, nil), nil
}

// Verdict is the upstream's health now: a fresh check, or with !fresh the
// last verdict when it is recent. The check connects to where Target says
// as st says (the proxy's login; bare) and sends PING (Check).
func (k *Connector) Verdict(ctx context.Context, fresh bool, st State) Verdict {
	return k.Health.recent(fresh, func() Verdict {
		addr, err := k.Target.Where()
		if err != nil {
			return k.Health.Note(k.Target.Name(), &SetupError{Reason: ReasonError, Setting: "upstream.sentinel", Msg: err.Error()})
		}
		return k.Health.Note(addr, k.Check(ctx, addr, st))
	})
}

// Check connects to addr as st says, as a connection of the proxy's does
// (TLS, the login), and sends PING, within the Dialer's timeout.
func (k *Connector) Check(ctx context.Context, addr string, st State) error {
	nc, err := k.Dialer.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(k.Dialer.Timeout))
	if err := k.Handshake(nc, st); err != nil {
		var re *ReplyError
		if !errors.As(err, &re) && k.Dialer.TLS() == nil && k.Dialer.SpeaksTLS(addr) {
			return ErrPlaintextToTLS(addr)
		}
		return err
	}
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	buf, n, err := ReadReply(nc, make([]byte, 0, 512))
	if err != nil {
		if k.Dialer.TLS() == nil && k.Dialer.SpeaksTLS(addr) {
			return ErrPlaintextToTLS(addr)
		}
		return err
	}
	if buf[0] == '-' {
		return &ReplyError{Msg: strings.TrimRight(string(buf[1:n]), "\r\n")}
	}
	return nil
}
