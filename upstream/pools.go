package upstream

import "sync"

// Pools are the proxy's pools by key (K is the proxy's: protocol,
// database, login, node): a pool is made when its key is first asked for,
// configured as Config says for that key. Set Config before the first Get.
type Pools[K comparable] struct {
	Config func(key K) PoolConfig

	mu sync.Mutex
	m  map[K]*Pool
}

// Get is the pool of key, made now if there is none.
func (ps *Pools[K]) Get(key K) *Pool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pl := ps.m[key]
	if pl == nil {
		pl = NewPool(ps.Config(key))
		ps.put(key, pl)
	}
	return pl
}

// Put makes pl the pool of key (a pool made elsewhere: the proxy's tests).
func (ps *Pools[K]) Put(key K, pl *Pool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.put(key, pl)
}

func (ps *Pools[K]) put(key K, pl *Pool) {
	if ps.m == nil {
		ps.m = map[K]*Pool{}
	}
	ps.m[key] = pl
}

func (ps *Pools[K]) all() []*Pool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	pools := make([]*Pool, 0, len(ps.m))
	for _, pl := range ps.m {
		pools = append(pools, pl)
	}
	return pools
}

// Shared is every pool's shared connections now (not the spares), live
// or dead.
func (ps *Pools[K]) Shared() []*Conn {
	var conns []*Conn
	for _, pl := range ps.all() {
		conns = append(conns, pl.Shared()...)
	}
	return conns
}

// Live counts every pool's live shared connections (not the spares).
func (ps *Pools[K]) Live() int {
	n := 0
	for _, pl := range ps.all() {
		n += pl.Live()
	}
	return n
}

// CloseAll takes every pool out, and closes their connections, spares
// too. A pool asked for after is a new one.
func (ps *Pools[K]) CloseAll() {
	ps.mu.Lock()
	pools := ps.m
	ps.m = nil
	ps.mu.Unlock()
	for _, pl := range pools {
		pl.CloseAll()
	}
}
