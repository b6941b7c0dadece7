package proxy

import (
	"context"

	"github.com/lockproxy/lockproxy/admin"
	"github.com/lockproxy/lockproxy/upstream"
)

// Check is one finding of [Proxy.CheckUpstream].
type Check = admin.Check

// CheckUpstream connects to Valkey as the configuration says and tries
// what lockproxy will need there, lock cycles through this proxy included
// (admin.Admin.CheckUpstream, for check-config).
func (p *Proxy) CheckUpstream(ctx context.Context) []Check {
	return p.ops.admin.CheckUpstream(ctx, admin.Upstream{
		Where:    p.upstreamAddr,
		TLS:      p.upstreamTLS() != nil,
		User:     upstream.UserOrDefault(p.opts.Upstream.Username),
		Password: p.opts.Upstream.Password,
		Cluster:  p.cl != nil,
		Connect: func(ctx context.Context, addr string) (bool, string) {
			// New's probe found Valkey unusable (within dial_timeout):
			// that is the answer, not a second wait as long.
			if v := p.connector.Health.Last(); v.Reason != "" && !v.Up() {
				return false, v.String()
			}
			v := upstream.Classify(addr, p.connector.Check(ctx, addr, p.checkState()))
			return v.Up(), v.String()
		},
		Serve:        p.Serve,
		ReplyTimeout: p.opts.Upstream.ReplyTimeout.D(),
	})
}
