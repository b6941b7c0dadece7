package lockproxy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/proxy"
)

// Without admin credentials, a proxy whose listen is not loopback refuses
// the admin subcommands to everyone (on main RELOAD and the rest were open
// to every client); a loopback one keeps them open, and admin.open_read
// opens the read-only ones.
func TestAdminNeedsCredentialsOffLoopback(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		listen   string
		openRead bool
		stats    string // "" = allowed, else the error's start
		reload   string
	}{
		{"0.0.0.0:6380", false, "NOAUTH LOCKPROXY STATS needs an admin login, and none is configured: lockproxy listens on 0.0.0.0:6380", "NOAUTH LOCKPROXY RELOAD needs an admin login"},
		{"0.0.0.0:6380", true, "", "NOAUTH LOCKPROXY RELOAD needs an admin login"},
		{"127.0.0.1:6380", false, "", "ERR lockproxy reload failed"}, // allowed; no config file to read
	} {
		e := newEnv(t, proxy.Options{Config: policy.Config{Listen: tc.listen, Admin: policy.AdminConfig{OpenRead: tc.openRead}}})
		c := e.client()
		for what, want := range map[string]string{"STATS": tc.stats, "RELOAD": tc.reload} {
			err := c.Do(ctx, "LOCKPROXY", what).Err()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (want == "") != (got == "") || !strings.HasPrefix(got, want) {
				t.Errorf("listen %s open_read %v: LOCKPROXY %s: %q, want %q", tc.listen, tc.openRead, what, got, want)
			}
		}
		if err := c.Do(ctx, "LOCKPROXY", "HELP").Err(); err != nil {
			t.Errorf("HELP: %v", err)
		}
	}
}
