package proxy

import (
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/telemetry"
)

// noRule labels what happened outside any rule (FLUSHALL, FLUSHDB).
const noRule = "(none)"

func ruleLabel(r *policy.Rule) string {
	if r == nil {
		return noRule
	}
	return r.Pattern.String()
}

// rule is r's counters (noRule's for nil).
func (o *ops) rule(r *policy.Rule) *telemetry.RuleStats { return o.rules.Rule(ruleLabel(r)) }
