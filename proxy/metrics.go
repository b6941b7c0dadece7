package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/lockproxy/lockproxy/admin"
	"github.com/lockproxy/lockproxy/telemetry"
)

// MetricsHandler serves /metrics (Prometheus text format), /livez (200
// while the process serves HTTP: it does not depend on Valkey), /healthz
// (200 while Valkey answers PING) and /readyz (200 while the proxy accepts
// clients, Valkey answers as configured and lock commands can be decided;
// otherwise 503 and the reason), and behind the admin credentials /config
// (the configuration in force, redacted) and, with metrics.pprof,
// /debug/pprof/. Every metric is read from the same counters
// LOCKPROXY STATS and INFO lockproxy report, at scrape time. Package admin
// serves them; the answers are the proxy's.
func (p *Proxy) MetricsHandler() http.Handler {
	metrics := telemetry.Collector{Numbers: func() *telemetry.Numbers { return p.numbers(true) }}
	return admin.Handler(admin.Probes{Metrics: metrics, Healthy: p.healthy, Ready: p.ready,
		Admin: p.ops.admin, Pprof: p.opts.Metrics.Pprof})
}

// healthy is /healthz's reason for 503, or "".
func (p *Proxy) healthy(ctx context.Context) string {
	if v := p.upstreamVerdict(ctx, true); !v.Up() {
		return "upstream " + p.tableAddr() + " " + v.String()
	}
	return ""
}

// ready is /readyz's reason for 503, or "".
func (p *Proxy) ready(ctx context.Context) string {
	p.mu.Lock()
	listening := len(p.listeners)
	p.mu.Unlock()
	switch {
	case p.shuttingDown.Load():
		return "shutting down"
	case p.draining.Load():
		return drainingReason
	case listening == 0:
		return "not accepting clients yet"
	}
	if msg := p.healthy(ctx); msg != "" {
		return msg
	}
	if d := p.decider.Load(); d.Active() && d.Table == nil {
		// Read in the background (one read at a time), waited for at
		// most probeWait: a probe does not wait for Valkey.
		if p.tableLoading.CompareAndSwap(false, true) {
			done := make(chan struct{})
			go func() { defer close(done); defer p.tableLoading.Store(false); p.loadTable() }()
			t := time.NewTimer(probeWait)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
			case <-ctx.Done():
			}
		}
		if p.decider.Load().Table == nil {
			return "Valkey's command table not read yet: lock commands cannot be decided"
		}
	}
	return ""
}
