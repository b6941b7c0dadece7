package telemetry

import (
	"testing"
	"time"
)

// A grant after contention observes the wait from the owner's first
// contention, once; a grant without one observes 0.
func TestLockStatsWait(t *testing.T) {
	var l LockStats
	t0 := time.Unix(1700000000, 0)
	l.Contended("lock:*", "o1", []byte("lock:a"), t0)
	l.Contended("lock:*", "o1", []byte("lock:a"), t0.Add(time.Second)) // not the first
	l.Granted("lock:*", "o1", []byte("lock:a"), t0.Add(3*time.Second))
	l.Granted("lock:*", "o1", []byte("lock:a"), t0.Add(9*time.Second)) // no wait left
	rs := l.Rule("lock:*")
	if rs.Contention.Load() != 2 || rs.Grants.Load() != 2 || l.All.Grants.Load() != 2 {
		t.Fatalf("contention %d, grants %d, all grants %d", rs.Contention.Load(), rs.Grants.Load(), l.All.Grants.Load())
	}
	if s := rs.Wait.Snapshot(); s.Count != 2 || s.Sum != 3 || s.Max != 3 {
		t.Errorf("wait: count %d, sum %v, max %v; want 2, 3s, 3s", s.Count, s.Sum, s.Max)
	}
}

func TestLockStatsReleasedAndCounted(t *testing.T) {
	var l LockStats
	l.Released("lock:*", 2*time.Second, true)
	l.Released("lock:*", -1, false) // held unknown: not observed
	rs := l.Rule("lock:*")
	if rs.Released.Load() != 2 || rs.Lapsed.Load() != 1 || l.All.Lapsed.Load() != 1 || rs.Hold.Snapshot().Count != 1 {
		t.Errorf("released %d, lapsed %d, all lapsed %d, hold count %d", rs.Released.Load(), rs.Lapsed.Load(), l.All.Lapsed.Load(), rs.Hold.Snapshot().Count)
	}
	l.Counted("lock:*", Counts{Outcome: OutcomeRewritten, Renewed: true})
	l.Counted("lock:*", Counts{Outcome: OutcomeRefused, Refused: true, Reason: "NOTOWNER not yours", Prevented: true})
	l.Counted("lock:*", Counts{Outcome: OutcomeRefused, Refused: true})
	l.Counted(NoRule, Counts{Outcome: OutcomeFlushed})
	if rs.Renewed.Load() != 1 || rs.Prevented.Load() != 1 || rs.Outcome(OutcomeRefused) != 2 || l.All.Outcome(OutcomeFlushed) != 1 {
		t.Errorf("renewed %d, prevented %d, refused %d, all flushed %d", rs.Renewed.Load(), rs.Prevented.Load(), rs.Outcome(OutcomeRefused), l.All.Outcome(OutcomeFlushed))
	}
	got := map[string]int64{}
	for _, kc := range rs.RefusalCounts() {
		got[kc.Kind] = kc.N
	}
	if got["NOTOWNER"] != 1 || got["OTHER"] != 1 {
		t.Errorf("refusals by kind: %v", got)
	}
}
