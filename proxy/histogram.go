package proxy

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// histogram is one duration distribution: client_golang's histogram counts
// the buckets, the sum and the count (what /metrics exports), beside the
// smallest and largest value seen, which STATS reports and which narrow
// its quantile estimates.
type histogram struct {
	once   sync.Once
	h      prometheus.Histogram
	maxNs  atomic.Int64
	minNs1 atomic.Int64 // the smallest value + 1; 0 = none yet
}

// durationBuckets are upper bounds in seconds, from a fast in-process lock
// to a long batch job.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

func (h *histogram) upperBounds() []float64 { return durationBuckets }

func (h *histogram) hist() prometheus.Histogram {
	h.once.Do(func() {
		h.h = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "duration_seconds", Buckets: h.upperBounds()})
	})
	return h.h
}

func (h *histogram) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.hist().Observe(d.Seconds())
	for {
		m := h.maxNs.Load()
		if int64(d) <= m || h.maxNs.CompareAndSwap(m, int64(d)) {
			break
		}
	}
	for {
		m := h.minNs1.Load()
		if (m != 0 && int64(d)+1 >= m) || h.minNs1.CompareAndSwap(m, int64(d)+1) {
			break
		}
	}
}

type histSnapshot struct {
	count   uint64
	sum     float64   // seconds
	max     float64   // seconds
	min     float64   // seconds
	bounds  []float64 // the buckets' upper bounds, seconds
	buckets []uint64  // per bucket, the last one past the largest bound
}

// snapshot reads the histogram: per-bucket counts (the last one past the
// largest bound), sum and count as client_golang holds them.
func (h *histogram) snapshot() histSnapshot {
	s := histSnapshot{bounds: h.upperBounds()}
	s.buckets = make([]uint64, len(s.bounds)+1)
	var m dto.Metric
	if err := h.hist().Write(&m); err != nil || m.Histogram == nil {
		return s
	}
	var prev uint64
	for i, b := range m.Histogram.GetBucket() {
		if i < len(s.bounds) {
			s.buckets[i] = b.GetCumulativeCount() - prev
			prev = b.GetCumulativeCount()
		}
	}
	s.count = m.Histogram.GetSampleCount()
	s.buckets[len(s.bounds)] = s.count - prev
	s.sum = m.Histogram.GetSampleSum()
	s.max = float64(h.maxNs.Load()) / 1e9
	if v := h.minNs1.Load(); v > 0 {
		s.min = float64(v-1) / 1e9
	}
	return s
}

func (s histSnapshot) mean() float64 {
	if s.count == 0 {
		return 0
	}
	return s.sum / float64(s.count)
}

// quantile estimates the q-quantile in seconds: the nearest-rank sample
// (the ceil(q*count)-th smallest), exact when that is the smallest or the
// largest value seen, else by linear interpolation inside its bucket,
// narrowed to those two.
func (s histSnapshot) quantile(q float64) float64 {
	if s.count == 0 {
		return 0
	}
	rank := math.Ceil(q * float64(s.count))
	switch {
	case rank <= 1:
		return s.min
	case rank >= float64(s.count):
		return s.max
	}
	var cum float64
	for i, n := range s.buckets {
		if n == 0 {
			continue
		}
		if cum+float64(n) >= rank {
			lo := s.min
			if i > 0 {
				lo = math.Max(s.bounds[i-1], s.min)
			}
			hi := s.max
			if i < len(s.bounds) {
				hi = math.Min(s.bounds[i], s.max)
			}
			if hi < lo {
				return hi
			}
			return lo + (hi-lo)*(rank-cum)/float64(n)
		}
		cum += float64(n)
	}
	return s.max
}
