package proxy

import (
	"context"

	"github.com/lockproxy/lockproxy/upstream"
)

// upstreamAddr is where new upstream connections go: the configured address,
// with Sentinel the primary it names now (asked by ctx's deadline when
// unknown), in front of a cluster any node (upstream.Target).
func (p *Proxy) upstreamAddr(ctx context.Context) (string, error) {
	return p.connector.Target.Where(ctx)
}

// upstreamName names the upstream in messages and logs (upstream.Target).
func (p *Proxy) upstreamName() string { return p.connector.Target.Name() }

// watchSentinel follows Sentinel's failovers until ctx ends. On a failover
// every upstream connection to the old primary is closed: shared ones are
// redialled to the new primary on the next command; sessions with a
// dedicated connection are told and closed, their state being gone.
func (p *Proxy) watchSentinel(ctx context.Context) {
	defer p.wg.Done()
	p.sentinel.Watch(ctx, p.opts.Upstream.ReconnectBackoff.D(), func(from, to string) {
		p.log.Warn("following a Sentinel failover", "master", p.opts.Upstream.Sentinel.Master, "from", from, "to", to)
		p.reopen(upstream.ErrFailover, true)
	})
}

// reopen fails every shared upstream connection (and, with dedicated,
// every session's own), so that the next command dials again.
func (p *Proxy) reopen(err error, dedicated bool) {
	conns := p.pools.Shared()
	if dedicated {
		p.mu.Lock()
		for s := range p.sessions {
			if c := s.dedicated(); c != nil {
				conns = append(conns, c)
			}
		}
		p.mu.Unlock()
	}
	for _, c := range conns {
		c.Fail(err)
	}
}
