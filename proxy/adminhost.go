package proxy

import (
	"context"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/admin"
	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// The proxy as package admin sees it: adminHost is its admin.Host,
// adminConn a session as an admin.Conn; the failed-login limit
// (clients.AuthLimiter) is its admin.Limiter as it is.

func (p *Proxy) newAdmin() *admin.Admin {
	return admin.New(adminHost{p}, admin.Options{
		Loopback: p.opts.ListenLoopback(), Listen: p.opts.Listen, OpenRead: p.opts.Admin.OpenRead,
		ConfigFile: p.opts.ConfigPath, LogLevelLive: p.opts.LogLevel != nil, Log: p.log,
		Limiter: p.ops.authLimit, FailLimit: clients.AuthFailLimit, FailWindow: clients.AuthFailWindow,
	}, p.opts.Config)
}

type adminHost struct{ p *Proxy }

func (h adminHost) Decider() *rewrite.Decider   { return h.p.decider.Load() }
func (h adminHost) LoadTable() *rewrite.Decider { return h.p.loadTable() }
func (h adminHost) NoTableText() string         { return h.p.noTableError() }
func (h adminHost) Timeout() time.Duration      { return h.p.opts.Upstream.DialTimeout.D() }
func (h adminHost) Side() *redis.Client         { return h.p.side }
func (h adminHost) Reload() (admin.ReloadResult, error) {
	return h.p.Reload()
}

func (h adminHost) Events(n int, keep func(*telemetry.Event) bool) []telemetry.Event {
	return h.p.events.Recent(n, keep)
}

func (h adminHost) Stats() []telemetry.Line { return h.p.statLines() }

func (h adminHost) SlowLog() *telemetry.SlowLog { return h.p.ops.slow }

func (h adminHost) Map() *cluster.Map {
	if h.p.cl == nil {
		return nil
	}
	return h.p.cl.Map()
}

func (h adminHost) NodeClient(addr string) *redis.Client { return h.p.nodeClient(addr) }

func (h adminHost) KeyClient(key []byte) (*redis.Client, func()) { return h.p.keyClient(key) }

func (h adminHost) Sessions() []admin.Session {
	list := h.p.allSessions()
	out := make([]admin.Session, len(list))
	for i, x := range list {
		out[i] = admin.Session{ID: x.id, Addr: x.addr, Host: x.host, Name: x.nameSnapshot(), Owner: x.connOwner,
			UserOwner: x.userOwnerSnapshot()}
		if cc, ok := x.nc.(*telemetry.CountConn); ok {
			out[i].Since = cc.Since()
		}
	}
	return out
}

type adminConn struct{ s *session }

func (c adminConn) ID() uint64                  { return c.s.id }
func (c adminConn) DB() int                     { return c.s.db }
func (c adminConn) Proto() int                  { return c.s.proto }
func (c adminConn) Addr() string                { return c.s.addr }
func (c adminConn) Host() string                { return c.s.host }
func (c adminConn) Name() string                { return c.s.nameSnapshot() }
func (c adminConn) Owner(r *policy.Rule) string { return c.s.Owner(r) }
func (c adminConn) FoundMissing(key string)     { c.s.foundMissing(key) }

// nodeClient is a client of one cluster node, logged in as the proxy, for
// an admin command's few round trips; the caller closes it.
func (p *Proxy) nodeClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Username: p.opts.Upstream.Username, Password: p.opts.Upstream.Password,
		DialTimeout: p.opts.Upstream.DialTimeout.D(), Protocol: 2, PoolSize: 1, MaxRetries: 1,
		DisableIdentity: true,
		Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.dialer.Dial(ctx, addr)
		},
	})
}

// keyClient is the client for the server that holds key: the side client,
// or the primary of key's slot (FENCE, and the undo scripts of
// durability).
func (p *Proxy) keyClient(key []byte) (*redis.Client, func()) {
	if p.cl != nil {
		if m := p.cl.Map(); m != nil {
			if a, ok := m.Primary(cluster.Slot(key)); ok {
				c := p.nodeClient(a)
				return c, func() { c.Close() }
			}
		}
	}
	return p.side, func() {}
}
