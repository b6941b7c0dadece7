package proxy

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/telemetry"
)

// ruleStats counts what happened under one lock rule.
type ruleStats struct {
	grants     atomic.Int64 // acquisitions
	contention atomic.Int64 // SET NX that found the lock taken
	released   atomic.Int64 // releases run token-checked (blind DEL/UNLINK rewritten)
	renewed    atomic.Int64 // lease changes run token-checked
	lapsed     atomic.Int64 // releases that came after the lease ran out
	prevented  atomic.Int64 // successor deletions prevented (rewritten to a no-op, or refused)
	outcomes   [numOutcomes]atomic.Int64
	refusalsMu sync.Mutex
	refusals   map[string]*atomic.Int64 // by the refusal's code word
	hold, wait telemetry.Histogram
}

// Outcomes in the order they are reported.
var outcomes = [...]Outcome{OutcomeRewritten, OutcomeRefused, OutcomeObserved,
	OutcomeSuccessorPrevented, OutcomeSuccessorDeleted, OutcomeFlushed, OutcomeStaleRefused}

const numOutcomes = len(outcomes)

func outcomeIndex(o Outcome) int {
	for i, x := range outcomes {
		if x == o {
			return i
		}
	}
	return -1
}

// refusalKinds are always reported, even at zero, so dashboards and scripts
// can rely on them: the code words of the errors the proxy refuses commands
// with (safe release and fencing). Fenced writes the fence refuses inside
// Valkey (STALE) are counted apart, as stale_write_refused events.
var refusalKinds = []string{"NOTOWNER", "TOKENRELEASE", "LOCKED", "UNFENCED"}

// outcome is how many events of an outcome the rule (or the total) saw.
func (rs *ruleStats) outcome(o Outcome) int64 { return rs.outcomes[outcomeIndex(o)].Load() }

func (rs *ruleStats) refusal(kind string) *atomic.Int64 {
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

// refusalCounts returns every refusal kind with its count, the fixed kinds
// first.
func (rs *ruleStats) refusalCounts() []kindCount {
	rs.refusalsMu.Lock()
	defer rs.refusalsMu.Unlock()
	out := make([]kindCount, 0, len(refusalKinds)+len(rs.refusals))
	for _, k := range refusalKinds {
		var n int64
		if c := rs.refusals[k]; c != nil {
			n = c.Load()
		}
		out = append(out, kindCount{k, n})
	}
	var extra []string
	for k := range rs.refusals {
		known := false
		for _, f := range refusalKinds {
			known = known || f == k
		}
		if !known {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		out = append(out, kindCount{k, rs.refusals[k].Load()})
	}
	return out
}

type kindCount struct {
	kind string
	n    int64
}

// noRule labels what happened outside any rule (FLUSHALL, FLUSHDB).
const noRule = "(none)"

func ruleLabel(r *policy.Rule) string {
	if r == nil {
		return noRule
	}
	return r.Pattern.String()
}

func (o *ops) rule(r *policy.Rule) *ruleStats {
	label := ruleLabel(r)
	if v, ok := o.rules.Load(label); ok {
		return v.(*ruleStats)
	}
	v, _ := o.rules.LoadOrStore(label, &ruleStats{})
	return v.(*ruleStats)
}

// eachRule calls f for every rule label seen so far, in label order.
func (o *ops) eachRule(f func(label string, rs *ruleStats)) {
	type entry struct {
		label string
		rs    *ruleStats
	}
	var list []entry
	o.rules.Range(func(k, v any) bool {
		list = append(list, entry{k.(string), v.(*ruleStats)})
		return true
	})
	sort.Slice(list, func(i, j int) bool { return list[i].label < list[j].label })
	for _, e := range list {
		f(e.label, e.rs)
	}
}
