package proxy

import "testing"

// A batch's replies land in their family's buckets, with the sum, the
// smallest and the largest round trip.
func TestRoundTripsRecord(t *testing.T) {
	var r roundTrips
	now := monoNow()
	// Sent long enough ago that the clock read in record is later still.
	ps := []pend{
		{fam: famForward, sent: now - 2e6}, // 2 ms ago: past the 1 ms bound
		{fam: famForward, sent: now - 40e9},
		{fam: famLock, sent: now - 7e6},
		{fam: famLock, sent: 0}, // not timed
	}
	r.record(ps)
	f := r.snapshot(famForward)
	if f.count != 2 || f.buckets[numRTBuckets] != 1 || f.min < 0.002 || f.max < 40 {
		t.Errorf("forward: %+v", f)
	}
	for i, b := range roundTripBuckets {
		if b < 0.002 && f.buckets[i] != 0 {
			t.Errorf("forward: %d in the bucket up to %v s", f.buckets[i], b)
		}
	}
	l := r.snapshot(famLock)
	if l.count != 1 || l.sum < 0.007 || l.min != l.max {
		t.Errorf("lock: %+v", l)
	}
	if a := r.snapshot(famAdmin); a.count != 0 {
		t.Errorf("admin: %+v", a)
	}
	if q := f.quantile(0.5); q < 0.002 || q > 40 {
		t.Errorf("forward p50 %v", q)
	}
}
