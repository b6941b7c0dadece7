package e2e_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
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
		e := newEnv(t, proxy.Options{Config: config.Config{Listen: tc.listen, Admin: config.AdminConfig{OpenRead: tc.openRead}}})
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

// LOCKPROXY HELP says what LOCKS lists as docs/operations.md does: the locks Valkey
// records, whichever instance granted them (on main HELP said "granted
// through this proxy").
func TestHelpLocksMatchesReadme(t *testing.T) {
	e := newEnv(t, proxy.Options{})
	r := dialRaw(t, e.addr)
	help := r.do("LOCKPROXY", "HELP")
	mustContain(t, help, "(granted through any lockproxy instance)")
	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(readme), "so the locks granted through every lockproxy")
}

// keep_lapsed from the configuration sets how long owner records outlive
// their lease (on main it could not be configured: 10 minutes always).
func TestKeepLapsedConfigurable(t *testing.T) {
	opts := rulesOptions(t, rule("rewrite"))
	opts.Config.KeepLapsed = config.Duration(3 * time.Second)
	e := newEnv(t, opts)
	r := dialRaw(t, e.addr)
	eq(t, r.do("SET", "k:lock", "tok", "NX", "PX", "1000"), "+OK\r\n")
	ttl, err := e.direct().PTTL(context.Background(), "{k:lock}:lockproxy:owners").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= time.Second || ttl > 4*time.Second {
		t.Fatalf("owner records live %s, want the lease (1s) + keep_lapsed (3s) at most", ttl)
	}
}
