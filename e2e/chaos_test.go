package e2e_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chaosTotals is the part of cmd/chaos's JSON totals the test checks.
type chaosTotals struct {
	Mode             string `json:"mode"`
	SuccessorDeleted int    `json:"successor_locks_deleted"`
	StaleAccepted    int    `json:"stale_writes_accepted"`
	Overlaps         int    `json:"overlapping_critical_sections"`
	Lost             int    `json:"replies_lost"`
	Misrouted        int    `json:"replies_misrouted"`
	HolderRefused    int    `json:"holders_refused"`
	PortableOwners   bool   `json:"portable_owners"`
	Grants           int    `json:"grants"`
	Writes           int    `json:"writes_accepted"`
	Stops            int    `json:"worker_sigstops"`
	Stalls           int    `json:"worker_stalls"`
	ProxyRestarts    int    `json:"proxy_restarts"`
	ProxyKills       int    `json:"proxy_kills"`
	ValkeyRestarts   int    `json:"valkey_restarts"`
	Failovers        int    `json:"cluster_failovers"`
	PrimaryStops     int    `json:"primary_sigstops"`
	WritesRefused    int    `json:"writes_refused"`
	Scripts          bool   `json:"scripts"`
}

func (c chaosTotals) violations() int {
	n := c.SuccessorDeleted + c.StaleAccepted + c.Overlaps + c.Lost + c.Misrouted
	if c.PortableOwners {
		n += c.HolderRefused
	}
	return n
}

// A short run of the chaos tool (make chaos runs it for a minute per mode):
// no violation through lockproxy, and violations against plain Valkey under
// the same faults — the checker can fail.
func TestChaosShort(t *testing.T) {
	px, plain, err := runChaos(t, "-restart-every", "1500ms")
	if px.violations() != 0 {
		t.Errorf("violations through lockproxy: %+v", px)
	}
	if plain.violations() == 0 {
		t.Errorf("no violation against plain Valkey: the checker cannot tell: %+v", plain)
	}
	// The faults did happen.
	if px.Grants < 20 || px.Writes == 0 || px.Stops == 0 || px.Stalls == 0 || px.ProxyRestarts == 0 || px.ValkeyRestarts == 0 {
		t.Errorf("the proxy run did not exercise every fault: %+v", px)
	}
	if err != nil && px.violations() == 0 && plain.violations() > 0 {
		t.Errorf("chaos exited with %v although the totals pass", err)
	}
}

// The same with two lockproxy processes in front of one Valkey: workers
// (session: client_name) send each command to the other instance than the
// last, and one instance at a time is killed with SIGKILL and started again.
// No violation, and no holder refused while its lease ran; plain Valkey
// still shows the faults.
func TestChaosTwoInstancesShort(t *testing.T) {
	px, plain, err := runChaos(t, "-instances", "2", "-restart-every", "1000ms")
	if !px.PortableOwners {
		t.Fatalf("the run did not use portable owners: %+v", px)
	}
	if px.violations() != 0 {
		t.Errorf("violations through two lockproxy instances: %+v", px)
	}
	if plain.violations() == 0 {
		t.Errorf("no violation against plain Valkey: the checker cannot tell: %+v", plain)
	}
	if px.Grants < 20 || px.Writes == 0 || px.Stops == 0 || px.ProxyKills == 0 || px.ValkeyRestarts == 0 {
		t.Errorf("the proxy run did not exercise every fault: %+v", px)
	}
	if err != nil && px.violations() == 0 && plain.violations() > 0 {
		t.Errorf("chaos exited with %v although the totals pass", err)
	}
}

// The same with a lock library's own scripts (issue 18): workers take
// locks with bsm/redislock's obtain script, write the resource with a
// script and release with redislock's release script. Through lockproxy
// the obtain mints the grant, the scripted writes are fenced (some are
// refused as stale) and nothing is violated; against plain Valkey the
// release is safe, but stale writes are accepted.
func TestChaosScriptsShort(t *testing.T) {
	px, plain, err := runChaos(t, "-scripts", "-restart-every", "1500ms")
	if !px.Scripts {
		t.Fatalf("the run did not use scripts: %+v", px)
	}
	if px.violations() != 0 {
		t.Errorf("violations through lockproxy: %+v", px)
	}
	if plain.StaleAccepted == 0 {
		t.Errorf("no stale write accepted by plain Valkey: the checker cannot tell: %+v", plain)
	}
	if px.Grants < 20 || px.Writes == 0 || px.WritesRefused == 0 || px.Stops == 0 || px.Stalls == 0 || px.ProxyRestarts == 0 || px.ValkeyRestarts == 0 {
		t.Errorf("the proxy run did not exercise every fault: %+v", px)
	}
	if err != nil && px.violations() == 0 && plain.violations() > 0 {
		t.Errorf("chaos exited with %v although the totals pass", err)
	}
}

// The same in front of a Valkey Cluster (3 primaries, 3 replicas): the
// Valkey faults are a CLUSTER FAILOVER on a replica and a primary stopped
// with SIGSTOP for a moment, besides the proxy restarts; the plain run's
// workers are cluster-aware clients (MOVED and ASK followed). No violation
// through lockproxy (no redirect leaked, none misrouted), violations
// without it.
func TestChaosClusterShort(t *testing.T) {
	px, plain, err := runChaos(t, "-cluster", "-restart-every", "1000ms")
	if px.violations() != 0 {
		t.Errorf("violations through lockproxy in front of a cluster: %+v", px)
	}
	if plain.violations() == 0 {
		t.Errorf("no violation against the plain cluster: the checker cannot tell: %+v", plain)
	}
	if px.Grants < 20 || px.Writes == 0 || px.Stops == 0 || px.ProxyRestarts == 0 || px.Failovers == 0 {
		t.Errorf("the proxy run did not exercise every fault: %+v", px)
	}
	if err != nil && px.violations() == 0 && plain.violations() > 0 {
		t.Errorf("chaos exited with %v although the totals pass", err)
	}
}

// runChaos runs cmd/chaos for 5 s per mode with the given extra flags and
// returns its totals for lockproxy and plain Valkey, and its exit error.
func runChaos(t *testing.T, flags ...string) (px, plain chaosTotals, exit error) {
	t.Helper()
	bin := buildBinary(t, "../cmd/chaos")
	cmd := exec.Command(bin, append([]string{"-duration", "5s", "-workers", "6", "-locks", "2", "-json"}, flags...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("chaos did not finish within 90 s:\n%s\n%s", out.String(), errb.String())
	}
	t.Logf("chaos run (%v):\n%s%s", time.Since(start).Round(time.Second), errb.String(), out.String())
	totals := map[string]chaosTotals{}
	for _, line := range strings.Split(out.String(), "\n") {
		if js, ok := strings.CutPrefix(line, "TOTALS "); ok {
			var c chaosTotals
			if err := json.Unmarshal([]byte(js), &c); err != nil {
				t.Fatalf("%q: %v", js, err)
			}
			totals[c.Mode] = c
		}
	}
	px, plain = totals["proxy"], totals["plain"]
	if px.Mode == "" || plain.Mode == "" {
		t.Fatalf("missing totals (exit %v)", err)
	}
	return px, plain, err
}
