package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockproxy/lockproxy/upstream"
)

// upstreamAddr is where new upstream connections go: the configured address,
// or with Sentinel the primary it names now.
func (p *Proxy) upstreamAddr() (string, error) {
	if p.cl != nil {
		return p.cl.AnyNode()
	}
	if p.opts.Upstream.Sentinel.Master == "" {
		return p.opts.Upstream.Addr, nil
	}
	return p.sentinel.Primary()
}

// upstreamName names the upstream in messages and logs: the configured
// address, or with Sentinel the master's name and the primary's address
// Sentinel gave last (upstream.addr, unused then, keeps its default).
func (p *Proxy) upstreamName() string {
	if p.cl != nil {
		return p.tableAddr()
	}
	m := p.opts.Upstream.Sentinel.Master
	if m == "" {
		return p.opts.Upstream.Addr
	}
	addr := p.sentinel.Known()
	if addr == "" {
		return fmt.Sprintf("Sentinel master %q (primary unknown)", m)
	}
	return fmt.Sprintf("%s (Sentinel master %q)", addr, m)
}

// forgetMaster makes the next dial ask Sentinel again (after a dial failed:
// the primary may have moved before Sentinel announced it).
func (p *Proxy) forgetMaster() {
	if p.cl != nil {
		p.cl.RefreshSoon() // in a cluster: the node may have failed over
		return
	}
	if p.opts.Upstream.Sentinel.Master == "" {
		return
	}
	p.sentinel.Forget()
}

// watchSentinel follows Sentinel's failovers until ctx ends. On a failover
// every upstream connection to the old primary is closed: shared ones are
// redialled to the new primary on the next command; sessions with a
// dedicated connection are told and closed, their state being gone.
func (p *Proxy) watchSentinel(ctx context.Context) {
	defer p.wg.Done()
	p.sentinel.Watch(ctx, p.opts.Upstream.ReconnectBackoff.D(), func(from, to string) {
		p.log.Warn("following a Sentinel failover", "master", p.opts.Upstream.Sentinel.Master, "from", from, "to", to)
		p.reopen(errFailover, true)
	})
}

var errFailover = errors.New("the primary was switched by Sentinel")

// reopen fails every shared upstream connection (and, with dedicated,
// every session's own), so that the next command dials again.
func (p *Proxy) reopen(err error, dedicated bool) {
	p.poolMu.Lock()
	var conns []*upstream.Conn
	for _, pl := range p.pools {
		conns = append(conns, pl.Shared()...)
	}
	p.poolMu.Unlock()
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
