package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probes are what the HTTP endpoints ask the proxy. Each returns "" while
// the answer is yes, else the reason, which the endpoint answers with 503.
type Probes struct {
	// Metrics is the proxy's counter table on /metrics.
	Metrics prometheus.Collector
	// Healthy: Valkey answers PING.
	Healthy func(ctx context.Context) string
	// Ready: the proxy accepts clients, Valkey answers as configured and
	// lock commands can be decided.
	Ready func(ctx context.Context) string
	// Admin, when set, serves /config and, with Pprof (metrics.pprof),
	// /debug/pprof/, behind its admin credentials (httpadmin.go).
	Admin *Admin
	Pprof bool
}

// Handler serves /metrics (Prometheus text format, with Go's and the
// process's collectors), /livez (200 while the process serves HTTP: it
// does not depend on Valkey), /healthz ("ok") and /readyz ("ready"), or
// 503 with the probe's reason; and the admin pages of p.Admin.
func Handler(p Probes) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		p.Metrics,
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/healthz", probe(p.Healthy, "ok"))
	mux.HandleFunc("/readyz", probe(p.Ready, "ready"))
	if p.Admin != nil {
		p.Admin.adminPages(mux, p.Pprof)
	}
	return mux
}

func probe(why func(context.Context) string, yes string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if msg := why(r.Context()); msg != "" {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, yes)
	}
}
