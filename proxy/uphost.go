package proxy

import (
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// newUpHost is the proxy as its upstream connections see it (package
// upstream's Host): its goroutine group, logger, reply timeout, counters
// and error texts. Set in New, before the first connection opens; a
// cluster (cork) is there exactly when seeds are given (startCluster).
func (p *Proxy) newUpHost() upstream.Host {
	return upstream.Host{
		WG:           &p.wg,
		Log:          p.log,
		ReplyTimeout: p.opts.Upstream.ReplyTimeout.D(),
		Cork:         len(p.opts.Upstream.Cluster.Seeds) > 0,
		RoundTrip:    p.ops.recordRoundTrips,
		Failed: func(addr string, err error, cmds int) {
			p.connector.Health.Count(addr, err)
			p.ops.upFailedCmds.Add(int64(cmds))
		},
		LostText: func(addr string, err error, dedicated bool) string {
			if dedicated {
				return errDedicatedLost(addr, err)
			}
			return errUpstreamLost(addr, err)
		},
		EvalFromSHA:   locks.EvalFromSHA,
		ScriptFlushed: resp.AppendError(nil, errScriptFlushed),
	}
}
