package telemetry

import "testing"

// A batch's round trips land in their label's buckets, with the sum, the
// smallest and the largest; labels stay apart.
func TestRoundTripsRecord(t *testing.T) {
	var r RoundTrips
	var b RoundTripBatch
	b.Add(0, 2e6) // 2 ms: past the 1 ms bound
	b.Add(0, 40e9)
	b.Add(1, 7e6)
	r.Record(&b)
	f := r.Snapshot(0)
	if f.Count != 2 || f.Buckets[numRTBuckets] != 1 || f.Min != 0.002 || f.Max != 40 {
		t.Errorf("label 0: %+v", f)
	}
	for i, bound := range RoundTripBuckets {
		if bound < 0.002 && f.Buckets[i] != 0 {
			t.Errorf("label 0: %d in the bucket up to %v s", f.Buckets[i], bound)
		}
	}
	l := r.Snapshot(1)
	if l.Count != 1 || l.Sum != 0.007 || l.Min != l.Max {
		t.Errorf("label 1: %+v", l)
	}
	if a := r.Snapshot(2); a.Count != 0 || a.Min != 0 {
		t.Errorf("label 2: %+v", a)
	}
	if q := f.Quantile(0.5); q < 0.002 || q > 40 {
		t.Errorf("label 0 p50 %v", q)
	}
	// A second batch lowers the smallest and keeps the largest.
	var b2 RoundTripBatch
	b2.Add(0, 1e5)
	r.Record(&b2)
	if f := r.Snapshot(0); f.Count != 3 || f.Min != 0.0001 || f.Max != 40 {
		t.Errorf("label 0 after a second batch: %+v", f)
	}
}
