package proxy

import (
	"context"
	"log/slog"
	"net"
	"time"
)

// countConn counts a client connection's bytes into the proxy's totals.
type countConn struct {
	net.Conn
	o     *ops
	since time.Time
}

func (o *ops) conn(nc net.Conn) net.Conn { return &countConn{Conn: nc, o: o, since: time.Now()} }

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.o.bytesIn.Add(int64(n))
	}
	return n, err
}

// unwrap gives the socket beneath, for writes that do not wait (direct.go);
// countWrite counts what those wrote.
func (c *countConn) unwrap() net.Conn { return c.Conn }
func (c *countConn) countWrite(n int) { c.o.bytesOut.Add(int64(n)) }

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.o.bytesOut.Add(int64(n))
	}
	return n, err
}

// countingHandler counts warnings and errors logged: every failure the proxy
// meets (an upstream it cannot reach, a client dropped for not reading, a
// reload refused ...) is logged at one of these levels.
type countingHandler struct {
	h slog.Handler
	o *ops
}

func (c *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || c.h.Enabled(ctx, l)
}

func (c *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level >= slog.LevelError:
		c.o.logError.Add(1)
	case r.Level >= slog.LevelWarn:
		c.o.logWarn.Add(1)
	}
	if !c.h.Enabled(ctx, r.Level) {
		return nil
	}
	return c.h.Handle(ctx, r)
}

func (c *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{h: c.h.WithAttrs(as), o: c.o}
}

func (c *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{h: c.h.WithGroup(name), o: c.o}
}
