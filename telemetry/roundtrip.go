package telemetry

import "sync/atomic"

// RoundTripBuckets are upper bounds in seconds for a command's trip to
// Valkey and back: from a fraction of a millisecond on one host to a
// command that held Valkey for seconds.
var RoundTripBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

const numRTBuckets = len(RoundTripBuckets)

// rtBoundsNs are RoundTripBuckets in nanoseconds.
var rtBoundsNs = func() (b [numRTBuckets]int64) {
	for i, s := range RoundTripBuckets {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// MaxFamilies is how many labels (the proxy's command families, numbered
// from 0) a RoundTrips keeps apart.
const MaxFamilies = 8

// RoundTrips is the round-trip histogram of each label. It is written once
// per batch of replies read (Record), not once per reply: a reader adds its
// batch's counts with one atomic add per bucket it touched.
type RoundTrips struct {
	fam [MaxFamilies]histogram
}

// histogram is one latency histogram over RoundTripBuckets, shared by
// the round trips per family and the commands per name (commandstats.go).
type histogram struct {
	buckets [numRTBuckets + 1]atomic.Uint64
	sumNs   atomic.Int64
	maxNs   atomic.Int64
	minNs1  atomic.Int64 // the smallest + 1; 0 = none yet
}

// add counts n observations in bucket j summing sumNs, the largest maxNs
// and the smallest minNs.
func (h *histogram) add(j int, n uint64, sumNs, maxNs, minNs int64) {
	h.buckets[j].Add(n)
	h.sumNs.Add(sumNs)
	h.bound(maxNs, minNs)
}

// bound raises the maximum to maxNs and lowers the minimum to minNs.
func (h *histogram) bound(maxNs, minNs int64) {
	for m := h.maxNs.Load(); maxNs > m && !h.maxNs.CompareAndSwap(m, maxNs); m = h.maxNs.Load() {
	}
	for m := h.minNs1.Load(); (m == 0 || minNs+1 < m) && !h.minNs1.CompareAndSwap(m, minNs+1); m = h.minNs1.Load() {
	}
}

// snapshot reads the histogram.
func (h *histogram) snapshot() Snapshot {
	s := Snapshot{Bounds: RoundTripBuckets[:], Buckets: make([]uint64, numRTBuckets+1)}
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

// RoundTripBatch counts one batch's replies on the reader's stack (its
// zero value is an empty batch).
type RoundTripBatch struct {
	buckets [MaxFamilies][numRTBuckets + 1]uint32
	sumNs   [MaxFamilies]int64
	maxNs   [MaxFamilies]int64
	minNs   [MaxFamilies]int64
	used    [MaxFamilies]bool
}

// Add counts one round trip of d nanoseconds under label f (below
// MaxFamilies).
func (b *RoundTripBatch) Add(f int, d int64) {
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

// Record adds a batch's round trips to the histograms.
func (r *RoundTrips) Record(b *RoundTripBatch) {
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
		h.bound(b.maxNs[f], b.minNs[f])
	}
}

// Snapshot reads label f's histogram.
func (r *RoundTrips) Snapshot(f int) Snapshot { return r.fam[f].snapshot() }
