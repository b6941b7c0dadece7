package telemetry

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"time"
)

// Traffic counts the bytes exchanged with clients (client_bytes_total).
type Traffic struct {
	In, Out atomic.Int64
}

// CountConn is a client connection whose bytes count into a Traffic.
type CountConn struct {
	net.Conn
	t     *Traffic
	since time.Time
}

// Conn wraps a client connection accepted now to count its bytes.
func (t *Traffic) Conn(nc net.Conn) net.Conn {
	return &CountConn{Conn: nc, t: t, since: time.Now()}
}

func (c *CountConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.t.In.Add(int64(n))
	}
	return n, err
}

func (c *CountConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.t.Out.Add(int64(n))
	}
	return n, err
}

// Unwrap gives the socket beneath, for writes that do not wait; CountWrite
// counts what those wrote.
func (c *CountConn) Unwrap() net.Conn { return c.Conn }
func (c *CountConn) CountWrite(n int) { c.t.Out.Add(int64(n)) }

// Since is when the connection was accepted.
func (c *CountConn) Since() time.Time { return c.since }

// LogCounts counts warnings and errors logged (log_messages_total): every
// failure a program meets is logged at one of these levels.
type LogCounts struct {
	Warn, Error atomic.Int64
}

// Handler wraps h to count into l; records below h's level are counted
// (warnings and errors) but not written.
func (l *LogCounts) Handler(h slog.Handler) slog.Handler { return &countingHandler{h: h, l: l} }

type countingHandler struct {
	h slog.Handler
	l *LogCounts
}

func (c *countingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || c.h.Enabled(ctx, l)
}

func (c *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Level >= slog.LevelError:
		c.l.Error.Add(1)
	case r.Level >= slog.LevelWarn:
		c.l.Warn.Add(1)
	}
	if !c.h.Enabled(ctx, r.Level) {
		return nil
	}
	return c.h.Handle(ctx, r)
}

func (c *countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countingHandler{h: c.h.WithAttrs(as), l: c.l}
}

func (c *countingHandler) WithGroup(name string) slog.Handler {
	return &countingHandler{h: c.h.WithGroup(name), l: c.l}
}
