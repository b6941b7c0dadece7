package telemetry

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Histogram is one duration distribution: client_golang's histogram counts
// the buckets, the sum and the count (what /metrics exports), beside the
// smallest and largest value seen, which STATS reports and which narrow
// its quantile estimates.
type Histogram struct {
	once   sync.Once
	h      prometheus.Histogram
	maxNs  atomic.Int64
	minNs1 atomic.Int64 // the smallest value + 1; 0 = none yet
}

// durationBuckets are upper bounds in seconds, from a fast in-process lock
// to a long batch job.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

func (h *Histogram) upperBounds() []float64 { return durationBuckets }

func (h *Histogram) hist() prometheus.Histogram {
	h.once.Do(func() {
		h.h = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "duration_seconds", Buckets: h.upperBounds()})
	})
	return h.h
}

func (h *Histogram) Observe(d time.Duration) {
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

// Snapshot is a histogram read at one moment: what /metrics exports and
// what INFO and STATS summarise.
type Snapshot struct {
	Count   uint64
	Sum     float64   // seconds
	Max     float64   // seconds
	Min     float64   // seconds
	Bounds  []float64 // the buckets' upper bounds, seconds
	Buckets []uint64  // per bucket, the last one past the largest bound
}

// Snapshot reads the histogram: per-bucket counts (the last one past the
// largest bound), sum and count as client_golang holds them.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.upperBounds()}
	s.Buckets = make([]uint64, len(s.Bounds)+1)
	var m dto.Metric
	if err := h.hist().Write(&m); err != nil || m.Histogram == nil {
		return s
	}
	var prev uint64
	for i, b := range m.Histogram.GetBucket() {
		if i < len(s.Bounds) {
			s.Buckets[i] = b.GetCumulativeCount() - prev
			prev = b.GetCumulativeCount()
		}
	}
	s.Count = m.Histogram.GetSampleCount()
	s.Buckets[len(s.Bounds)] = s.Count - prev
	s.Sum = m.Histogram.GetSampleSum()
	s.Max = float64(h.maxNs.Load()) / 1e9
	if v := h.minNs1.Load(); v > 0 {
		s.Min = float64(v-1) / 1e9
	}
	return s
}

func (s Snapshot) Mean() float64 {
	if s.Count == 0 {
		return 0
	}
	return s.Sum / float64(s.Count)
}

// Quantile estimates the q-quantile in seconds: the nearest-rank sample
// (the ceil(q*count)-th smallest), exact when that is the smallest or the
// largest value seen, else by linear interpolation inside its bucket,
// narrowed to those two.
func (s Snapshot) Quantile(q float64) float64 {
	if s.Count == 0 {
		return 0
	}
	rank := math.Ceil(q * float64(s.Count))
	switch {
	case rank <= 1:
		return s.Min
	case rank >= float64(s.Count):
		return s.Max
	}
	var cum float64
	for i, n := range s.Buckets {
		if n == 0 {
			continue
		}
		if cum+float64(n) >= rank {
			lo := s.Min
			if i > 0 {
				lo = math.Max(s.Bounds[i-1], s.Min)
			}
			hi := s.Max
			if i < len(s.Bounds) {
				hi = math.Min(s.Bounds[i], s.Max)
			}
			if hi < lo {
				return hi
			}
			return lo + (hi-lo)*(rank-cum)/float64(n)
		}
		cum += float64(n)
	}
	return s.Max
}

// Merge adds b's observations to a's (same bounds).
func (a Snapshot) Merge(b Snapshot) Snapshot {
	if b.Count == 0 {
		return a
	}
	if a.Count == 0 {
		return b
	}
	out := a
	out.Buckets = append([]uint64(nil), a.Buckets...)
	for i := range b.Buckets {
		out.Buckets[i] += b.Buckets[i]
	}
	out.Count += b.Count
	out.Sum += b.Sum
	out.Max = max(a.Max, b.Max)
	out.Min = min(a.Min, b.Min)
	return out
}
