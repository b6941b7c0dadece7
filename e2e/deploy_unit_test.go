package e2e_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
)

// The systemd unit is Type=notify and waits longer for a stop than any
// example's shutdown_timeout plus the half second lockproxy may take past
// it (on main: Type=exec, and TimeoutStopSec=20s cut the shared tier's 20s
// drain).
func TestUnitOutlastsShutdown(t *testing.T) {
	unit, err := os.ReadFile("../deploy/systemd/lockproxy.service")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Type=notify$`).Match(unit) {
		t.Error("the unit is not Type=notify")
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("no TimeoutStopSec")
	}
	stop, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../deploy/examples/*.yaml")
	files = append(files, "../config.example.yaml")
	re := regexp.MustCompile(`(?m)^shutdown_timeout:\s*(\S+)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Duration(config.DefaultShutdownTimeout)
		if m := re.FindSubmatch(b); m != nil {
			if d, err = time.ParseDuration(string(m[1])); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
		if need := d + time.Second; stop <= need {
			t.Errorf("%s: shutdown_timeout %s, but the unit's TimeoutStopSec is %s (needs more than %s)", f, d, stop, need)
		}
	}
}

// The systemd unit waits longer for a stop than any example's drain_delay
// and shutdown_timeout together, plus the half second lockproxy may take
// past them.
func TestUnitOutlastsDrain(t *testing.T) {
	unit, err := os.ReadFile("../deploy/systemd/lockproxy.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("no TimeoutStopSec")
	}
	stop, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../deploy/examples/*.yaml")
	files = append(files, "../config.example.yaml")
	setting := func(b []byte, name string, def time.Duration) time.Duration {
		m := regexp.MustCompile(`(?m)^` + name + `:\s*(\S+)`).FindSubmatch(b)
		if m == nil {
			return def
		}
		d, err := time.ParseDuration(string(m[1]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		need := setting(b, "drain_delay", config.DefaultDrainDelay.D()) + setting(b, "shutdown_timeout", config.DefaultShutdownTimeout.D()) + time.Second
		if stop <= need {
			t.Errorf("%s: TimeoutStopSec %s does not exceed drain_delay + shutdown_timeout + 1s (%s)", f, stop, need)
		}
	}
}

// Every alert has a runbook_url whose anchor is a heading of
// docs/operations.md (on main the annotations were free text).
func TestAlertRunbooks(t *testing.T) {
	rules, err := os.ReadFile("../deploy/prometheus/lockproxy.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllSubmatch(doc, -1) {
		a := strings.ToLower(strings.ReplaceAll(string(m[1]), " ", "-"))
		anchors[regexp.MustCompile(`[^a-z0-9_-]`).ReplaceAllString(a, "")] = true
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\S+)$`).FindAllSubmatch(rules, -1)
	urls := regexp.MustCompile(`(?m)^\s*runbook_url: "https://github.com/lockproxy/lockproxy/blob/main/docs/operations.md#([^"]+)"$`).FindAllSubmatch(rules, -1)
	if len(alerts) == 0 || len(urls) != len(alerts) {
		t.Fatalf("%d alerts, %d runbook_urls", len(alerts), len(urls))
	}
	for i, u := range urls {
		if !anchors[string(u[1])] {
			t.Errorf("%s: no heading for #%s in docs/operations.md", alerts[i][1], u[1])
		}
	}
}
