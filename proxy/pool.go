package proxy

import (
	"time"

	"github.com/lockproxy/lockproxy/upstream"
)

// poolKey names a set of interchangeable shared connections: commands that
// carry no connection state may go to any of them, as long as the protocol
// version and selected database match the session's.
type poolKey struct {
	proto int
	db    int
	node  string // in a cluster: the primary the connections go to
	login string // a client's own login (logins.go); "": the proxy's
}

// pool is the shared connections for key (upstream.Pools).
func (p *Proxy) pool(key poolKey) *upstream.Pool { return p.pools.Get(key) }

// poolConfig is the pool of key's (upstream.Pools.Config): dialled with
// the session state every shared connection of key is told.
func (p *Proxy) poolConfig(key poolKey) upstream.PoolConfig {
	return upstream.PoolConfig{
		Size:       p.opts.Upstream.PoolSize,
		Dial:       func(spare bool) (*upstream.Conn, error) { return p.dialShared(key, spare) },
		Failed:     func(err error, retryIn time.Duration) { p.sharedDialFailed(key, err, retryIn) },
		Backoff:    p.opts.Upstream.ReconnectBackoff.D(),
		MaxBackoff: p.opts.Upstream.MaxBackoff.D(),
		Closed:     p.closed.Load,
	}
}

// dialShared opens a shared connection of key (spare: bare, without
// lockproxy's scripts: Valkey may be running a script, and would answer
// SCRIPT LOAD with BUSY; the first EVALSHA of a lock script on one loads
// its script: upstream/retry.go), and counts what the dial showed.
func (p *Proxy) dialShared(key poolKey, spare bool) (*upstream.Conn, error) {
	st := p.sharedState(key)
	st.Bare = spare
	c, err := p.dial(st, nil)
	p.connector.Health.Count(p.tableAddr(), err)
	if key.login == "" && key.node == "" {
		// The proxy's own login: what the dial showed is the upstream's
		// health (a client's own login is the client's business).
		p.connector.Health.Note(p.tableAddr(), err)
	}
	if err == nil {
		p.ops.dials.Add(1)
	}
	return c, err
}

// sharedDialFailed counts and logs a failed dial of a shared connection of
// key, which its slot answers with for retryIn.
func (p *Proxy) sharedDialFailed(key poolKey, err error, retryIn time.Duration) {
	p.ops.dialErrors.Add(1)
	name := p.upstreamName()
	if key.node != "" {
		name = key.node // a cluster node's pool
	}
	p.log.Warn("cannot open a shared upstream connection", "upstream", name, "err", err, "retry_in", retryIn)
}

// sharedState is what every shared connection of key is told at connect.
func (p *Proxy) sharedState(key poolKey) upstream.State {
	st := upstream.State{
		Proto:    key.proto,
		DB:       key.db,
		Username: p.opts.Upstream.Username,
		Password: p.opts.Upstream.Password,
		Auth:     p.opts.Upstream.Password != "",
		Node:     key.node,
	}
	if key.login != "" {
		// The client's login, never the proxy's in its place: a login
		// the registry lost (none is ever removed) would log in with
		// no password, which Valkey refuses.
		c, _ := p.logins.Creds(key.login)
		st.ProxyUser, st.ProxyPass = st.Username, st.Password
		st.Username, st.Password, st.Auth, st.Login = c.User, c.Pass, true, true
	}
	return st
}
