package proxy

import (
	"sync/atomic"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
)

// roundTripBuckets are upper bounds in seconds for a command's trip to
// Valkey and back: from a fraction of a millisecond on one host to a
// command that held Valkey for seconds.
var roundTripBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

const numRTBuckets = len(roundTripBuckets)

// rtBoundsNs are roundTripBuckets in nanoseconds.
var rtBoundsNs = func() (b [numRTBuckets]int64) {
	for i, s := range roundTripBuckets {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// roundTrips is the round-trip histogram of each command family. It is
// written once per batch of replies read (roundTripBatch), not once per
// reply: a reader adds its batch's counts with one atomic add per bucket
// it touched.
type roundTrips struct {
	fam [commands.NumFamilies]struct {
		buckets [numRTBuckets + 1]atomic.Uint64
		sumNs   atomic.Int64
		maxNs   atomic.Int64
		minNs1  atomic.Int64 // the smallest + 1; 0 = none yet
	}
}

// roundTripBatch counts one batch's replies on the reader's stack.
type roundTripBatch struct {
	buckets [commands.NumFamilies][numRTBuckets + 1]uint32
	sumNs   [commands.NumFamilies]int64
	maxNs   [commands.NumFamilies]int64
	minNs   [commands.NumFamilies]int64
	used    [commands.NumFamilies]bool
}

// record adds the round trips of replies just read: from when each command
// was queued on the connection to now (one clock read for the batch).
func (r *roundTrips) record(ps []upstream.Pend) {
	if len(ps) == 0 {
		return
	}
	now := upstream.MonoNow()
	var b roundTripBatch
	for i := range ps {
		if ps[i].Sent == 0 {
			continue
		}
		f, d := commands.Family(ps[i].Fam), now-ps[i].Sent
		j := 0
		for j < numRTBuckets && d > rtBoundsNs[j] {
			j++
		}
		b.buckets[f][j]++
		b.sumNs[f] += d
		b.maxNs[f] = max(b.maxNs[f], d)
		if !b.used[f] || d < b.minNs[f] {
			b.minNs[f] = d
		}
		b.used[f] = true
	}
	for f := range b.used {
		if !b.used[f] {
			continue
		}
		h := &r.fam[f]
		for j, n := range b.buckets[f] {
			if n > 0 {
				h.buckets[j].Add(uint64(n))
			}
		}
		h.sumNs.Add(b.sumNs[f])
		for m := h.maxNs.Load(); b.maxNs[f] > m && !h.maxNs.CompareAndSwap(m, b.maxNs[f]); m = h.maxNs.Load() {
		}
		for m := h.minNs1.Load(); (m == 0 || b.minNs[f]+1 < m) && !h.minNs1.CompareAndSwap(m, b.minNs[f]+1); m = h.minNs1.Load() {
		}
	}
}

// snapshot reads family f's histogram.
func (r *roundTrips) snapshot(f commands.Family) telemetry.Snapshot {
	h := &r.fam[f]
	s := telemetry.Snapshot{Bounds: roundTripBuckets[:], Buckets: make([]uint64, numRTBuckets+1)}
	for j := range h.buckets {
		s.Buckets[j] = h.buckets[j].Load()
		s.Count += s.Buckets[j]
	}
	s.Sum = float64(h.sumNs.Load()) / 1e9
	s.Max = float64(h.maxNs.Load()) / 1e9
	if v := h.minNs1.Load(); v > 0 {
		s.Min = float64(v-1) / 1e9
	}
	return s
}
