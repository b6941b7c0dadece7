package proxy

import (
	"context"
	"net"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// The admin commands that read lock state from Valkey (LOCKPROXY LOCKS,
// STATS, SESSIONS, REINDEX, FENCE) ask the server that has it: the one
// upstream through the side client, or in a cluster the primary of each
// lock's slot.

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

// lockServer is a server that holds lock records, and the locks' indexes
// there (rewrite/index.go): the one of a Valkey that is not a cluster, or
// those of the slots a primary serves, lowest slot first.
type lockServer struct {
	c       *redis.Client
	indexes []string
	cluster bool
}

// lockServers are the servers that hold lock records: the side client, or
// every primary of the cluster. done closes what was opened for the call.
func (p *Proxy) lockServers() (servers []lockServer, done func()) {
	m := (*cluster.Map)(nil)
	if p.cl != nil {
		m = p.cl.Map()
	}
	if m == nil {
		return []lockServer{{c: p.side, indexes: []string{rewrite.StandaloneIndexKey}}}, func() {}
	}
	for _, sv := range m.Served() {
		ls := lockServer{c: p.nodeClient(sv.Primary), cluster: true}
		for _, slot := range sv.Slots {
			ls.indexes = append(ls.indexes, rewrite.SlotIndexKey(slot))
		}
		servers = append(servers, ls)
	}
	return servers, func() {
		for _, s := range servers {
			s.c.Close()
		}
	}
}

// keyClient is the client for the server that holds key: the side client,
// or the primary of key's slot.
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
