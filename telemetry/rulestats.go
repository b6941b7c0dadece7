package telemetry

import (
	"sort"
	"sync"
	"sync/atomic"
)

// RuleStats counts what happened under one lock rule (or, as a total, under
// all of them).
type RuleStats struct {
	Grants     atomic.Int64              // acquisitions
	Contention atomic.Int64              // SET NX that found the lock taken
	Released   atomic.Int64              // releases run token-checked (blind DEL/UNLINK rewritten)
	Renewed    atomic.Int64              // lease changes run token-checked
	Lapsed     atomic.Int64              // releases that came after the lease ran out
	Prevented  atomic.Int64              // successor deletions prevented (rewritten to a no-op, or refused)
	Outcomes   [NumOutcomes]atomic.Int64 // by AllOutcomes' order
	refusalsMu sync.Mutex
	refusals   map[string]*atomic.Int64 // by the refusal's code word
	Hold, Wait Histogram
}

// AllOutcomes are the outcomes in the order they are reported.
var AllOutcomes = [...]Outcome{OutcomeRewritten, OutcomeRefused, OutcomeObserved,
	OutcomeSuccessorPrevented, OutcomeSuccessorDeleted, OutcomeFlushed, OutcomeStaleRefused}

// NumOutcomes is how many outcomes there are.
const NumOutcomes = len(AllOutcomes)

// OutcomeIndex is o's place in AllOutcomes, -1 for no outcome.
func OutcomeIndex(o Outcome) int {
	for i, x := range AllOutcomes {
		if x == o {
			return i
		}
	}
	return -1
}

// RefusalKinds are always reported, even at zero, so dashboards and scripts
// can rely on them: the code words of the errors the proxy refuses commands
// with (safe release and fencing). Fenced writes the fence refuses inside
// Valkey (STALE) are counted apart, as stale_write_refused events.
var RefusalKinds = []string{"NOTOWNER", "TOKENRELEASE", "LOCKED", "UNFENCED"}

// Outcome is how many events of an outcome the rule (or the total) saw.
func (rs *RuleStats) Outcome(o Outcome) int64 { return rs.Outcomes[OutcomeIndex(o)].Load() }

// Refusal is the count of refusals with the code word kind.
func (rs *RuleStats) Refusal(kind string) *atomic.Int64 {
	rs.refusalsMu.Lock()
	defer rs.refusalsMu.Unlock()
	if rs.refusals == nil {
		rs.refusals = map[string]*atomic.Int64{}
	}
	c := rs.refusals[kind]
	if c == nil {
		c = new(atomic.Int64)
		rs.refusals[kind] = c
	}
	return c
}

// RefusalCounts returns every refusal kind with its count, the fixed kinds
// first, then the others in name order.
func (rs *RuleStats) RefusalCounts() []KindCount {
	rs.refusalsMu.Lock()
	defer rs.refusalsMu.Unlock()
	out := make([]KindCount, 0, len(RefusalKinds)+len(rs.refusals))
	for _, k := range RefusalKinds {
		var n int64
		if c := rs.refusals[k]; c != nil {
			n = c.Load()
		}
		out = append(out, KindCount{k, n})
	}
	var extra []string
	for k := range rs.refusals {
		known := false
		for _, f := range RefusalKinds {
			known = known || f == k
		}
		if !known {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		out = append(out, KindCount{k, rs.refusals[k].Load()})
	}
	return out
}

// KindCount is one refusal kind's count.
type KindCount struct {
	Kind string
	N    int64
}

// RuleSet is the RuleStats of every rule label seen, made on first use.
type RuleSet struct {
	m sync.Map // string → *RuleStats
}

// Rule is label's counters.
func (s *RuleSet) Rule(label string) *RuleStats {
	if v, ok := s.m.Load(label); ok {
		return v.(*RuleStats)
	}
	v, _ := s.m.LoadOrStore(label, &RuleStats{})
	return v.(*RuleStats)
}

// Each calls f for every rule label seen so far, in label order.
func (s *RuleSet) Each(f func(label string, rs *RuleStats)) {
	type entry struct {
		label string
		rs    *RuleStats
	}
	var list []entry
	s.m.Range(func(k, v any) bool {
		list = append(list, entry{k.(string), v.(*RuleStats)})
		return true
	})
	sort.Slice(list, func(i, j int) bool { return list[i].label < list[j].label })
	for _, e := range list {
		f(e.label, e.rs)
	}
}
