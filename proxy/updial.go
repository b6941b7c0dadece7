package proxy

import (
	"context"
	"net"
	"time"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// The proxy's side of its connections to Valkey (package upstream's
// Connector opens them, and keeps the upstream's health): the lock
// scripts and MONITOR's bookkeeping in every handshake, the primary's
// epoch learnt on each new connection, the event loop that reads a shared
// one, the session that owns a dedicated one.

// newConnector is the Connector of New, before the first connection opens
// (with Sentinel or a cluster, New and startCluster add them to its
// Target).
func (p *Proxy) newConnector() upstream.Connector {
	return upstream.Connector{
		Target:    upstream.Target{Addr: p.opts.Upstream.Addr},
		Dialer:    &p.dialer,
		Host:      &p.up,
		Health:    upstream.Health{Log: p.log, Wait: probeWait},
		Wait:      p.opts.Upstream.ReplyTimeout.D(),
		Handshake: p.handshake,
		Learn:     func(nc net.Conn, st upstream.State) error { return p.learnEpoch(nc, st.DB) },
		Rights:    p.upstreamRights,
		Record:    p.own.Handshake,
		Life:      p.life,
		Attach: func(c *upstream.Conn) {
			if lp := p.loops.Upstream(); lp != nil {
				lp.AddUp(c)
			}
		},
	}
}

// probeWait is the longest a probe (/readyz, /healthz, /metrics) waits for
// a check of Valkey under way before it answers with the last verdict: a
// probe answers within a second whatever Valkey does.
const probeWait = 500 * time.Millisecond

// upstreamRights are the rights of its ACL user lockproxy needs now, which
// each health check tries (upstream/rights.go): SELECT of upstream.db when
// it is not 0; with lock rules, what its scripts need.
func (p *Proxy) upstreamRights() []upstream.Right {
	var rights []upstream.Right
	if db := p.opts.Upstream.DB; db != 0 {
		rights = append(rights, upstream.RightSelect(db))
	}
	if p.decider.Load().Active() {
		rights = append(rights, upstream.RightEvalSHA, upstream.RightEval, upstream.RightScriptLoad, upstream.RightTime)
	}
	return rights
}

// dial connects to Valkey and replays st on the new connection, owner's
// own when not nil.
func (p *Proxy) dial(st upstream.State, owner *session) (*upstream.Conn, error) {
	if owner == nil { // never a nil *session in the interface
		return p.connector.Dial(st, nil)
	}
	return p.connector.Dial(st, owner)
}

// startUp starts a connection connect opened (upstream.Connector.Start).
func (p *Proxy) startUp(nc net.Conn, addr string, owner *session, relay func([]byte)) *upstream.Conn {
	var o upstream.Owner
	if owner != nil {
		o = owner // never a nil *session in the interface
	}
	return p.connector.Start(nc, addr, o, relay)
}

// connect opens a connection to Valkey (the primary now, with Sentinel) and
// replays st on it.
func (p *Proxy) connect(st upstream.State) (net.Conn, string, error) { return p.connector.Connect(st) }

// handshake replays st on nc (upstream.Handshake) with lockproxy's own
// scripts, keeping its commands out of MONITOR (clients.OwnLines).
func (p *Proxy) handshake(nc net.Conn, st upstream.State) error {
	return upstream.Handshake(nc, st, scriptBodies, p.own.Handshake)
}

// scriptBodies are the scripts every connection loads (unless bare).
var scriptBodies = func() []string {
	var b []string
	for _, sc := range rewrite.Scripts {
		b = append(b, sc.Body)
	}
	return b
}()

// upstreamVerdict is the upstream's health now (upstream.Connector.Verdict):
// a fresh check, or with !fresh the last verdict when it is recent.
func (p *Proxy) upstreamVerdict(ctx context.Context, fresh bool) upstream.Verdict {
	return p.connector.Verdict(ctx, fresh, p.checkState())
}

// checkState is how a health check logs in: as a shared connection of
// the proxy's own login, bare.
func (p *Proxy) checkState() upstream.State {
	st := p.sharedState(poolKey{proto: 2})
	st.Bare = true
	return st
}
