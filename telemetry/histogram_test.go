package telemetry

import (
	"testing"
	"time"
)

// Two holds of 934 ms and 2585 ms: the median is the first, not the 1 s
// bucket bound (hold_time_p50_ms said 1000 on main).
func TestQuantileNearestRank(t *testing.T) {
	var h Histogram
	h.Observe(934 * time.Millisecond)
	h.Observe(2585 * time.Millisecond)
	s := h.Snapshot()
	if got := s.Quantile(0.5); got != 0.934 {
		t.Errorf("p50 %v, want 0.934", got)
	}
	if got := s.Quantile(0.99); got != 2.585 {
		t.Errorf("p99 %v, want 2.585", got)
	}
	for i := 0; i < 98; i++ {
		h.Observe(time.Duration(10+i) * time.Millisecond)
	}
	s = h.Snapshot()
	if got := s.Quantile(0.5); got < 0.025 || got > 0.1 {
		t.Errorf("p50 of 100 samples %v, want within the 25-100 ms buckets", got)
	}
}
