package config

import (
	"strings"
	"testing"
	"time"
)

// drain_delay is 5s when a file leaves it out, and 0 when it says 0 (no
// drain, as before the setting existed); a negative one is refused.
func TestDrainDelay(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want time.Duration
	}{{"{}\n", 5 * time.Second}, {"drain_delay: 0s\n", 0}, {"drain_delay: 30s\n", 30 * time.Second}} {
		c, err := Parse("c.yaml", []byte(tc.yaml))
		if err != nil || c.DrainDelay.D() != tc.want {
			t.Errorf("%q: drain_delay %v (%v), want %v", tc.yaml, c.DrainDelay, err, tc.want)
		}
	}
	if got := Default().DrainDelay.D(); got != 5*time.Second {
		t.Errorf("Default(): drain_delay %v", got)
	}
	if _, err := Parse("c.yaml", []byte("drain_delay: -1s\n")); err == nil || !strings.Contains(err.Error(), "c.yaml:1: drain_delay: -1s is negative") {
		t.Errorf("negative: %v", err)
	}
}
