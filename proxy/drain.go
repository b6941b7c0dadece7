package proxy

// drainingReason is /readyz's answer while the proxy drains.
const drainingReason = "draining: shutting down after drain_delay; clients are still accepted and served until then"

// Drain turns /readyz to 503 while the proxy goes on accepting and serving
// clients, so that a load balancer or Kubernetes stops sending new ones
// before Shutdown closes the listener (cmd/lockproxy calls it on SIGTERM,
// for drain_delay). It cannot be undone; Shutdown follows it.
func (p *Proxy) Drain() { p.draining.Store(true) }
