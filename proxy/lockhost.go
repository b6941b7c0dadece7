package proxy

import (
	"context"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/rewrite"
)

// The seam to package locks: the proxy is its locks.Host (lockHost), a
// session its locks.Client.

// lockHost is the proxy as package locks sees it.
type lockHost struct{ p *Proxy }

// Eval runs an undo script in database db, on a connection of its own to
// key's node, within the dial timeout, and returns its integer reply.
func (h lockHost) Eval(key []byte, db int, script string, keys []string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), h.p.opts.Upstream.DialTimeout.D())
	defer cancel()
	kc, done := h.p.keyClient(key)
	defer done()
	c := kc.Conn()
	defer c.Close()
	if err := c.Select(ctx, db).Err(); err != nil {
		return 0, err
	}
	return c.Eval(ctx, script, keys, args...).Int64()
}

func (h lockHost) Own(nc net.Conn, n int) { h.p.own.Add(nc, n) } // clients.OwnLines

func (h lockHost) Contended(e *rewrite.Effect, now time.Time) { h.p.contended(e, now) } // lockcounts.go
func (h lockHost) Granted(e *rewrite.Effect, now time.Time)   { h.p.granted(e, now) }
func (h lockHost) Released(e *rewrite.Effect)                 { h.p.released(e) }
func (h lockHost) Record(ev Event, e *rewrite.Effect)         { h.p.record(ev, e) }

// Addr, Name and Grants make a session a locks.Client.
func (s *session) Addr() string          { return s.addr }
func (s *session) Name() string          { return s.nameSnapshot() }
func (s *session) Grants() *locks.Grants { return &s.grants }

// apply records what a command's reply meant (locks.Keeper.Apply).
func (s *session) apply(effects []rewrite.Effect, reply []byte) { s.p.locks.Apply(s, effects, reply) }

// foundMissing: Valkey has no record of this session's grant of key.
func (s *session) foundMissing(key string) { s.p.locks.FoundMissing(s, key) }
