package rewrite

import (
	"strings"
	"testing"
)

// The monitor's FLUSHALL probe (monitor.lua's flushed) is the key
// FlushProbeKey names, which Decider.own and the monitors' own-key checks
// refuse to clients.
func TestFlushProbeIsOwnKey(t *testing.T) {
	if !strings.Contains(monitorLua, "'"+FlushProbeKey+"'") {
		t.Fatalf("monitor.lua does not set the probe FlushProbeKey names (%s)", FlushProbeKey)
	}
	d := &Decider{}
	if !d.own([]byte(FlushProbeKey)) {
		t.Errorf("Decider.own(%q) = false", FlushProbeKey)
	}
}
