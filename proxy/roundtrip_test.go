package proxy

import (
	"testing"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/upstream"
)

// A batch's replies land in their family's buckets, with the sum, the
// smallest and the largest round trip.
func TestRoundTripsRecord(t *testing.T) {
	var r roundTrips
	now := upstream.MonoNow()
	// Sent long enough ago that the clock read in record is later still.
	ps := []upstream.Pend{
		{Fam: uint8(commands.FamForward), Sent: now - 2e6}, // 2 ms ago: past the 1 ms bound
		{Fam: uint8(commands.FamForward), Sent: now - 40e9},
		{Fam: uint8(commands.FamLock), Sent: now - 7e6},
		{Fam: uint8(commands.FamLock), Sent: 0}, // not timed
	}
	r.record(ps)
	f := r.snapshot(commands.FamForward)
	if f.Count != 2 || f.Buckets[numRTBuckets] != 1 || f.Min < 0.002 || f.Max < 40 {
		t.Errorf("forward: %+v", f)
	}
	for i, b := range roundTripBuckets {
		if b < 0.002 && f.Buckets[i] != 0 {
			t.Errorf("forward: %d in the bucket up to %v s", f.Buckets[i], b)
		}
	}
	l := r.snapshot(commands.FamLock)
	if l.Count != 1 || l.Sum < 0.007 || l.Min != l.Max {
		t.Errorf("lock: %+v", l)
	}
	if a := r.snapshot(commands.FamAdmin); a.Count != 0 {
		t.Errorf("admin: %+v", a)
	}
	if q := f.Quantile(0.5); q < 0.002 || q > 40 {
		t.Errorf("forward p50 %v", q)
	}
}
