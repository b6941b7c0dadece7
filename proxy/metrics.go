package proxy

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockproxy/lockproxy/telemetry"
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
	if v := p.upstreamVerdict(r.Context(), true); !v.up() {
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
	if v := p.upstreamVerdict(r.Context(), true); !v.up() {
		http.Error(w, "upstream "+p.tableAddr()+" "+v.String(), http.StatusServiceUnavailable)
		return
	}
	if d := p.decider.Load(); d.Active() && d.Table == nil && p.loadTable().Table == nil {
		http.Error(w, "Valkey's command table not read yet: lock commands cannot be decided", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// descs are the Prometheus descriptions of counterTable's rows, in order;
// nil for a row /metrics does not show.
var descs = func() []*prometheus.Desc {
	d := make([]*prometheus.Desc, len(counterTable))
	for i := range counterTable {
		if counterTable[i].metric != "" {
			d[i] = counterTable[i].descOf()
		}
	}
	return d
}()

// collector renders counterTable on /metrics.
type collector struct{ p *Proxy }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		if d != nil {
			ch <- d
		}
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	p.seedRules()
	for i := range counterTable {
		r, d := &counterTable[i], descs[i]
		switch {
		case d == nil:
		case r.kind == histogramRow:
			r.hist(p, func(h telemetry.Snapshot, labels ...string) { histogramMetric(ch, d, h, labels...) })
		default:
			vt := prometheus.CounterValue
			if r.kind == gaugeRow {
				vt = prometheus.GaugeValue
			}
			r.read(p, func(v int64, labels ...string) {
				ch <- prometheus.MustNewConstMetric(d, vt, float64(v), labels...)
			})
		}
	}
}

func histogramMetric(ch chan<- prometheus.Metric, d *prometheus.Desc, h telemetry.Snapshot, labels ...string) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, ub := range h.Bounds {
		cum += h.Buckets[i]
		buckets[ub] = cum
	}
	ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, labels...)
}
