package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/upstream"
	"github.com/redis/go-redis/v9"
)

// upstreamAddr is where new upstream connections go: the configured address,
// or with Sentinel the primary it names now.
func (p *Proxy) upstreamAddr() (string, error) {
	if p.cl != nil {
		return p.clusterAddr()
	}
	if p.opts.Upstream.Sentinel.Master == "" {
		return p.opts.Upstream.Addr, nil
	}
	p.masterMu.Lock()
	addr := p.master
	p.masterMu.Unlock()
	if addr != "" {
		return addr, nil
	}
	addr, err := p.resolveMaster()
	if err != nil {
		return "", err
	}
	p.masterMu.Lock()
	p.master = addr
	p.masterMu.Unlock()
	return addr, nil
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
	p.masterMu.Lock()
	addr := p.master
	p.masterMu.Unlock()
	if addr == "" {
		return fmt.Sprintf("Sentinel master %q (primary unknown)", m)
	}
	return fmt.Sprintf("%s (Sentinel master %q)", addr, m)
}

// forgetMaster makes the next dial ask Sentinel again (after a dial failed:
// the primary may have moved before Sentinel announced it).
func (p *Proxy) forgetMaster() {
	if p.cl != nil {
		p.cl.refreshSoon() // in a cluster: the node may have failed over
		return
	}
	if p.opts.Upstream.Sentinel.Master == "" {
		return
	}
	p.masterMu.Lock()
	p.master = ""
	p.masterMu.Unlock()
}

func (p *Proxy) sentinelClient(addr string) *redis.SentinelClient {
	s := p.opts.Upstream.Sentinel
	return redis.NewSentinelClient(&redis.Options{
		Addr: addr, Username: s.Username, Password: s.Password,
		DialTimeout: p.opts.Upstream.DialTimeout.D(), ReadTimeout: p.opts.Upstream.DialTimeout.D(), MaxRetries: -1,
	})
}

// resolveMaster asks each Sentinel in turn for the primary's address.
func (p *Proxy) resolveMaster() (string, error) {
	var errs []error
	for _, sa := range p.opts.Upstream.Sentinel.Addrs {
		sc := p.sentinelClient(sa)
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Upstream.DialTimeout.D())
		hp, err := sc.GetMasterAddrByName(ctx, p.opts.Upstream.Sentinel.Master).Result()
		cancel()
		sc.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v", sa, err))
	}
	return "", fmt.Errorf("no Sentinel knows master %q: %w", p.opts.Upstream.Sentinel.Master, errors.Join(errs...))
}

// watchSentinel follows +switch-master announcements until ctx ends. On a
// failover every upstream connection to the old primary is closed: shared
// ones are redialled to the new primary on the next command; sessions with a
// dedicated connection are told and closed, their state being gone.
func (p *Proxy) watchSentinel(ctx context.Context) {
	defer p.wg.Done()
	for i := 0; ctx.Err() == nil; i++ {
		sa := p.opts.Upstream.Sentinel.Addrs[i%len(p.opts.Upstream.Sentinel.Addrs)]
		sc := p.sentinelClient(sa)
		sub := sc.Subscribe(ctx, "+switch-master")
		ch := sub.Channel()
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case msg, ok := <-ch:
				if !ok {
					break loop
				}
				// "<master> <old-ip> <old-port> <new-ip> <new-port>"
				f := strings.Fields(msg.Payload)
				if len(f) == 5 && f[0] == p.opts.Upstream.Sentinel.Master {
					p.failover(net.JoinHostPort(f[3], f[4]))
				}
			}
		}
		sub.Close()
		sc.Close()
		select {
		case <-ctx.Done():
		case <-time.After(p.opts.Upstream.ReconnectBackoff.D()):
		}
	}
}

var errFailover = errors.New("the primary was switched by Sentinel")

func (p *Proxy) failover(addr string) {
	p.masterMu.Lock()
	old := p.master
	p.master = addr
	p.masterMu.Unlock()
	if old == addr {
		return
	}
	p.log.Warn("following a Sentinel failover", "master", p.opts.Upstream.Sentinel.Master, "from", old, "to", addr)
	p.reopen(errFailover, true)
}

// reopen fails every shared upstream connection (and, with dedicated,
// every session's own), so that the next command dials again.
func (p *Proxy) reopen(err error, dedicated bool) {
	p.poolMu.Lock()
	var conns []*upstream.Conn
	for _, pl := range p.pools {
		for i := range pl.slots {
			sl := &pl.slots[i]
			sl.mu.Lock()
			if sl.c != nil {
				conns = append(conns, sl.c)
			}
			sl.mu.Unlock()
		}
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
