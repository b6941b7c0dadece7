package proxy

import (
	"errors"
	"github.com/lockproxy/lockproxy/upstream"
	"sync"
	"time"
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

// pool is the shared connections for one poolKey. A session is pinned to one
// slot (by its id) so its pipelined commands stay in order on one connection.
type pool struct {
	p     *Proxy
	key   poolKey
	slots []slot
	// spares are the side connections sessions use while Valkey holds a
	// command back on their own slot's connection (busyscript.go).
	spares [spares]slot
}

type slot struct {
	mu      sync.Mutex
	c       *upstream.Conn
	err     error     // the last dial failure
	retryAt time.Time // until then, the last failure is answered at once
	backoff time.Duration
}

func (p *Proxy) pool(key poolKey) *pool {
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	pl := p.pools[key]
	if pl == nil {
		pl = &pool{p: p, key: key, slots: make([]slot, p.opts.Upstream.PoolSize)}
		p.pools[key] = pl
	}
	return pl
}

// conn returns the live connection of slot i, dialling it if needed. A slot
// whose dial failed answers with that failure until its backoff ends, so a
// down Valkey costs clients an error, not a pile-up of dials.
func (pl *pool) conn(i int) (*upstream.Conn, error) {
	return pl.slotConn(&pl.slots[i%len(pl.slots)], false)
}

// spares is how many spare connections a pool may have.
const spares = 4

// openSpares opens the pool's spare connections (busyscript.go) that are
// not open. They log in bare, without loading lockproxy's scripts: Valkey
// may be running a script, and would answer SCRIPT LOAD with BUSY (the
// first EVALSHA of a lock script on one loads its script: upstream/retry.go).
func (pl *pool) openSpares() {
	for i := range pl.spares {
		_, _ = pl.slotConn(&pl.spares[i], true)
	}
}

// freeSpare is an open spare connection where Valkey holds nothing back
// (with idle, where nothing at all is in flight), claimed for s (no other
// session takes it until s has queued its command there), else nil.
func (pl *pool) freeSpare(s *session, idle bool) *upstream.Conn {
	for i := range pl.spares {
		sl := &pl.spares[i]
		if !sl.mu.TryLock() {
			continue
		}
		c := sl.c
		sl.mu.Unlock()
		if c == nil || c.Dead() || !s.claim(c) {
			continue
		}
		if !c.Holds() && (!idle || c.Idle()) {
			return c
		}
		s.unclaim()
	}
	return nil
}

// sparesOpen reports whether openSpares would dial nothing.
func (pl *pool) sparesOpen() bool {
	for i := range pl.spares {
		if !pl.slotReady(&pl.spares[i]) {
			return false
		}
	}
	return true
}

func (pl *pool) slotConn(sl *slot, spare bool) (*upstream.Conn, error) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.c != nil && !sl.c.Dead() {
		return sl.c, nil
	}
	if sl.err != nil && time.Now().Before(sl.retryAt) {
		return nil, sl.err
	}
	if pl.p.closed.Load() {
		return nil, upstream.ErrClosed
	}
	st := pl.p.sharedState(pl.key)
	st.Bare = spare
	c, err := pl.p.dial(st, nil)
	p := pl.p
	p.countUpstreamError(p.tableAddr(), err)
	if pl.key.login == "" && pl.key.node == "" {
		// The proxy's own login: what the dial showed is the upstream's
		// health (a client's own login is the client's business).
		pl.p.noteUpstream(pl.p.tableAddr(), err)
	}
	var re *upstream.ReplyError
	if errors.As(err, &re) {
		// Valkey's answer to the handshake (SELECT of a database it
		// does not have): the client's error, not a failure to connect.
		return nil, err
	}
	if err != nil {
		pl.p.ops.dialErrors.Add(1)
		if sl.backoff == 0 {
			sl.backoff = pl.p.opts.Upstream.ReconnectBackoff.D()
		} else {
			sl.backoff = min(2*sl.backoff, pl.p.opts.Upstream.MaxBackoff.D())
		}
		sl.err = err
		sl.retryAt = time.Now().Add(sl.backoff)
		name := pl.p.upstreamName()
		if pl.key.node != "" {
			name = pl.key.node // a cluster node's pool
		}
		pl.p.log.Warn("cannot open a shared upstream connection", "upstream", name, "err", err, "retry_in", sl.backoff)
		return nil, err
	}
	pl.p.ops.dials.Add(1)
	if spare {
		c.MarkSpare(pl)
	}
	sl.c, sl.err, sl.backoff = c, nil, 0
	return c, nil
}

// ready reports whether conn(i) would answer without dialling: the slot
// has a live connection, or a dial failure still in its backoff. A slot
// being dialled by someone else is not ready.
func (pl *pool) ready(i int) bool {
	return pl.slotReady(&pl.slots[i%len(pl.slots)])
}

func (pl *pool) slotReady(sl *slot) bool {
	if !sl.mu.TryLock() {
		return false
	}
	defer sl.mu.Unlock()
	return (sl.c != nil && !sl.c.Dead()) ||
		(sl.err != nil && time.Now().Before(sl.retryAt)) || pl.p.closed.Load()
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
		c, _ := p.logins.creds(key.login)
		st.ProxyUser, st.ProxyPass = st.Username, st.Password
		st.Username, st.Password, st.Auth, st.Login = c.user, c.pass, true, true
	}
	return st
}

func (p *Proxy) closePools() {
	p.poolMu.Lock()
	pools := p.pools
	p.pools = map[poolKey]*pool{}
	p.poolMu.Unlock()
	for _, pl := range pools {
		for i := range len(pl.slots) + spares {
			sl := &pl.spares[max(i-len(pl.slots), 0)]
			if i < len(pl.slots) {
				sl = &pl.slots[i]
			}
			sl.mu.Lock()
			c := sl.c
			sl.c = nil
			sl.mu.Unlock()
			if c != nil {
				c.Close()
			}
		}
	}
}
