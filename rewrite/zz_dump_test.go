package rewrite

import (
	"os"
	"testing"

	"github.com/lockproxy/lockproxy/policy"
)

func TestZZDump(t *testing.T) {
	rules, err := policy.NewRules([]policy.LockRule{{Pattern: "*:lock"}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(os.Getenv("BODY"))
	os.WriteFile("/tmp/mon/out.lua", []byte(MonitorBody(string(body), MonitorShape{Locks: 1}, MonitorRulesFor(rules, policy.FlushReject))), 0o644)
}
