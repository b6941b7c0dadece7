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
	// Wait bounds a connection's whole set-up (Connect): finding where
	// it goes (Sentinel), the TCP dial and TLS handshake (within the
	// Dialer's Timeout too), the handshake's answers and the diagnosis of
	// a failure. A client's command waits for it, so it is
	// upstream.reply_timeout: no command waits longer, whatever Valkey
	// or Sentinel do.
	Wait time.Duration
	// Handshake makes nc equal to st (Handshake with the proxy's scripts,
	// its commands kept out of MONITOR).
	Handshake func(nc net.Conn, st State) error
	// Learn runs on a new connection after its handshake unless st.Bare
	// (the proxy learns the primary's epoch there).
	Learn func(nc net.Conn, st State) error
	// Rights are the rights of its ACL user lockproxy needs now, which a
	// check tries (rights.go); nil tries none.
	Rights func() []Right
	// Record is told of commands lockproxy sends of its own on a
	// connection before they are written, and done called once their
	// replies are read (the proxy keeps them out of MONITOR); nil when
	// nothing is kept out.
	Record func(nc net.Conn, n int) (done func())
	// Life ends when lockproxy shuts down: a check under way then ends
	// at once. Nil: never.
	Life context.Context
	// Attach hands a connection an event loop may read (Conn.Loopable)
	// to one, when there is one.
	Attach func(c *Conn)
}

// Connect opens a connection to Valkey (st.Node, else where Target says)
// and makes it equal to st, all of it within Wait. A failed dial makes
// Target ask again. Its errors are NodeErrors naming the address; a
// connection that speaks TLS where plaintext was configured says so, and
// a set-up past Wait is a SlowError.
func (k *Connector) Connect(st State) (net.Conn, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.Wait)
	defer cancel()
	deadline, _ := ctx.Deadline()
	addr := st.Node
	if addr == "" {
		var err error
		if addr, err = k.Target.Where(ctx); err != nil {
			return nil, "", err
		}
	}
	nc, err := k.Dialer.Dial(ctx, addr)
	if err != nil {
		k.Target.Forget()
		return nil, "", &NodeError{Addr: addr, Err: err}
	}
	_ = nc.SetDeadline(deadline)
	err = k.Handshake(nc, st)
	if err == nil && !st.Bare {
		err = k.Learn(nc, st)
	}
	if err != nil {
		nc.Close()
		return nil, "", &NodeError{Addr: addr, Err: k.setupFailure(ctx, addr, err, k.Wait, "upstream.reply_timeout")}
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

// setupFailure names why the set-up on a connection to addr failed with
// err: Valkey's answer as it is; no answer by the deadline a SlowError
// (wait, the setting that bounds it); a closed connection where plaintext
// was configured is asked whether it speaks TLS, by ctx's deadline.
func (k *Connector) setupFailure(ctx context.Context, addr string, err error, wait time.Duration, setting string) error {
	var re *ReplyError
	var rights *RightsError
	switch {
	case errors.As(err, &re), errors.As(err, &rights):
		return err // Valkey answered
	case IsTimeout(err):
		return &SlowError{Wait: wait, Setting: setting}
	case k.Dialer.TLS() == nil && k.Dialer.SpeaksTLS(ctx, addr):
		return ErrPlaintextToTLS(addr)
	}
	return err
}

// Verdict is the upstream's health: a recent verdict (less than a second
// old) unless fresh, else the one of a check that runs now in the
// background, waited for until ctx ends or Health.Wait passes, whichever
// comes first; a check not done by then leaves the last verdict. The check
// connects to where Target says as st says (the proxy's login; bare),
// sends PING and tries the rights (Check), within the Dialer's timeout.
func (k *Connector) Verdict(ctx context.Context, fresh bool, st State) Verdict {
	return k.Health.recent(ctx, fresh, func() Verdict {
		life := k.Life
		if life == nil {
			life = context.Background()
		}
		ctx, cancel := context.WithTimeout(life, k.Dialer.Timeout)
		defer cancel()
		addr, err := k.Target.Where(ctx)
		if err == nil {
			err = k.Check(ctx, addr, st)
		} else {
			addr = k.Target.Name()
		}
		if life.Err() != nil {
			return k.Health.Last() // cut short by the shutdown: nothing learnt
		}
		return k.Health.Note(addr, err)
	})
}

// Check connects to addr as st says, as a connection of the proxy's does
// (TLS, the login), sends PING and tries the Rights, all within the
// Dialer's timeout and by ctx's deadline.
func (k *Connector) Check(ctx context.Context, addr string, st State) error {
	ctx, cancel := context.WithTimeout(ctx, k.Dialer.Timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	nc, err := k.Dialer.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(deadline)
	// ctx may end before the deadline (lockproxy shuts down): the reads
	// end then too.
	defer context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })()
	fail := func(err error) error {
		return k.setupFailure(ctx, addr, err, k.Dialer.Timeout, "upstream.dial_timeout")
	}
	if err := k.Handshake(nc, st); err != nil {
		return fail(err)
	}
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return fail(err)
	}
	buf, n, err := ReadReply(nc, make([]byte, 0, 512))
	if err != nil {
		return fail(err)
	}
	if buf[0] == '-' {
		return &ReplyError{Msg: strings.TrimRight(string(buf[1:n]), "\r\n")}
	}
	if k.Rights != nil {
		if err := TryRights(nc, k.Rights(), k.Record); err != nil {
			return fail(err)
		}
	}
	return nil
}
