package telemetry

import "github.com/prometheus/client_golang/prometheus"

// Describe sends the Prometheus description of every row /metrics shows.
func (t *Table[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range t.descs {
		if d != nil {
			ch <- d
		}
	}
}

// Collect sends the samples of every row /metrics shows, read from src.
func (t *Table[S]) Collect(src S, ch chan<- prometheus.Metric) {
	for i := range t.rows {
		r, d := &t.rows[i], t.descs[i]
		switch {
		case d == nil:
		case r.Kind == KindHistogram:
			r.Hist(src, func(h Snapshot, labels ...string) { ch <- histogramMetric(d, h, labels...) })
		default:
			vt := prometheus.CounterValue
			if r.Kind == KindGauge {
				vt = prometheus.GaugeValue
			}
			r.Read(src, func(v int64, labels ...string) {
				ch <- prometheus.MustNewConstMetric(d, vt, float64(v), labels...)
			})
		}
	}
}

func histogramMetric(d *prometheus.Desc, h Snapshot, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, ub := range h.Bounds {
		cum += h.Buckets[i]
		buckets[ub] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets, labels...)
}

// Collector renders the counter table on /metrics: at each scrape it asks
// Numbers for the proxy's numbers (with the verdict on Valkey: Probed set)
// and sends every row's samples.
type Collector struct{ Numbers func() *Numbers }

func (c Collector) Describe(ch chan<- *prometheus.Desc) { counters.Describe(ch) }

func (c Collector) Collect(ch chan<- prometheus.Metric) { counters.Collect(c.Numbers(), ch) }
