package proxy

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsHandler serves /metrics (Prometheus text format), /livez (200
// while the process serves HTTP: it does not depend on Valkey), /healthz
// (200 while Valkey answers PING) and /readyz (200 while the proxy accepts
// clients, Valkey answers as configured and lock commands can be decided;
// otherwise 503 and the reason). Every metric is read from the same counters
// LOCKPROXY STATS and INFO lockproxy report, at scrape time.
func (p *Proxy) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&collector{p: p},
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/healthz", p.healthz)
	mux.HandleFunc("/readyz", p.readyz)
	return mux
}

func (p *Proxy) healthz(w http.ResponseWriter, r *http.Request) {
	if v := p.upstreamVerdict(r.Context(), true); !v.Up() {
		http.Error(w, "upstream "+p.tableAddr()+" "+v.String(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (p *Proxy) readyz(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	listening := len(p.listeners)
	p.mu.Unlock()
	switch {
	case p.shuttingDown.Load():
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	case listening == 0:
		http.Error(w, "not accepting clients yet", http.StatusServiceUnavailable)
		return
	}
	if v := p.upstreamVerdict(r.Context(), true); !v.Up() {
		http.Error(w, "upstream "+p.tableAddr()+" "+v.String(), http.StatusServiceUnavailable)
		return
	}
	if d := p.decider.Load(); d.Active() && d.Table == nil && p.loadTable().Table == nil {
		http.Error(w, "Valkey's command table not read yet: lock commands cannot be decided", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// collector renders counterTable on /metrics, every rule in force among
// its series.
type collector struct{ p *Proxy }

func (c *collector) Describe(ch chan<- *prometheus.Desc) { counterTable.Describe(ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.p.seedRules()
	counterTable.Collect(c.p, ch)
}
