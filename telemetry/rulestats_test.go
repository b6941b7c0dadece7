package telemetry

import (
	"reflect"
	"testing"
)

// The fixed refusal kinds come first, at 0 when never seen, then any other
// kind in name order; rules are visited in label order, each made once.
func TestRuleSetOrderAndRefusals(t *testing.T) {
	var set RuleSet
	set.Rule("lock:*").Refusal("ZED").Add(2)
	set.Rule("lock:*").Refusal("LOCKED").Add(3)
	set.Rule("job:*").Grants.Add(1)
	set.Rule("lock:*").Refusal("ABC").Add(1)

	want := []KindCount{{"NOTOWNER", 0}, {"TOKENRELEASE", 0}, {"LOCKED", 3}, {"UNFENCED", 0}, {"ABC", 1}, {"ZED", 2}}
	if got := set.Rule("lock:*").RefusalCounts(); !reflect.DeepEqual(got, want) {
		t.Errorf("refusal counts %v, want %v", got, want)
	}
	var labels []string
	var grants []int64
	set.Each(func(label string, rs *RuleStats) {
		labels = append(labels, label)
		grants = append(grants, rs.Grants.Load())
	})
	if !reflect.DeepEqual(labels, []string{"job:*", "lock:*"}) || !reflect.DeepEqual(grants, []int64{1, 0}) {
		t.Errorf("Each gave %v with grants %v, want [job:* lock:*] with [1 0]", labels, grants)
	}
	set.Rule("lock:*").Outcomes[OutcomeIndex(OutcomeStaleRefused)].Add(4)
	if got := set.Rule("lock:*").Outcome(OutcomeStaleRefused); got != 4 {
		t.Errorf("stale_write_refused %d, want 4", got)
	}
}
