package admin

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// relay serves l by passing bytes to and from addr: the proxy's stand-in
// for the lock cycles (a real proxy rewrites them; Valkey answers alike).
func relay(addr string) func(net.Listener) error {
	return func(l net.Listener) error {
		for {
			c, err := l.Accept()
			if err != nil {
				return err
			}
			up, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}
}

// findings is the checks as lines: "ok|FAIL what: detail".
func findings(cs []Check) string {
	var b strings.Builder
	for _, c := range cs {
		if c.OK {
			b.WriteString("ok ")
		} else {
			b.WriteString("FAIL ")
		}
		b.WriteString(c.What + ": " + c.Detail + "\n")
	}
	return b.String()
}

// CheckUpstream against a real valkey-server: every finding passes for a
// user with every right; a user without COMMAND, SCRIPT or the index's key
// fails where the rules need them (SCRIPT LOAD is optional); a primary not
// found or a connection refused end the check at once.
func TestCheckUpstream(t *testing.T) {
	srv := valkeytest.Start(t, "user narrow on >pw resetkeys ~lock:* +@all -command -script")
	rules, err := policy.NewRules([]policy.LockRule{{Pattern: "lock:*"}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(user string, r *policy.Rules) string {
		o := &redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1}
		if user != "" {
			o.Username, o.Password = user, "pw"
		}
		side := redis.NewClient(o)
		defer side.Close()
		a := New(&testHost{side: side, decider: &rewrite.Decider{Rules: r}, events: telemetry.NewRing(4)},
			Options{Loopback: true, Limiter: noLimit{}}, configOf())
		return findings(a.CheckUpstream(context.Background(), Upstream{
			Where:        func(context.Context) (string, error) { return srv.Addr, nil },
			User:         "default",
			Connect:      func(context.Context, string) (bool, string) { return true, "" },
			Serve:        relay(srv.Addr),
			ReplyTimeout: 2 * time.Second,
		}))
	}
	want := "ok connecting to " + srv.Addr + " (plaintext) as user default, PING: \n" +
		"ok COMMAND (Valkey's command table): \n" +
		"ok SCRIPT LOAD of lockproxy's scripts: \n"
	if got := check("", nil); got != want {
		t.Errorf("no rules, every right:\n%s\nwant:\n%s", got, want)
	}
	cycle := `ok rule "lock:*": SET NX PX, PEXPIRE, DEL of "lock:lockproxy-check-upstream" through lockproxy: ` + "\n"
	if got := check("", rules); got != want+cycle {
		t.Errorf("a rule, every right:\n%s\nwant:\n%s", got, want+cycle)
	}
	got := check("narrow", rules)
	for _, line := range []string{
		"FAIL COMMAND (Valkey's command table, needed by lock rules): NOPERM",
		"ok SCRIPT LOAD (optional): NOPERM",
		cycle,
		`FAIL rule "lock:*": reading the locks' index`,
	} {
		if !strings.Contains(got, line) {
			t.Errorf("narrow user: no %q in\n%s", line, got)
		}
	}

	a := New(&testHost{decider: &rewrite.Decider{}}, Options{}, configOf())
	got = findings(a.CheckUpstream(context.Background(), Upstream{
		Where: func(context.Context) (string, error) { return "", errors.New("no Sentinel knows master") }}))
	if got != "FAIL finding the primary: no Sentinel knows master; check upstream.sentinel\n" {
		t.Errorf("no primary: %q", got)
	}
	got = findings(a.CheckUpstream(context.Background(), Upstream{TLS: true, User: "u",
		Where:   func(context.Context) (string, error) { return "10.0.0.1:6379", nil },
		Connect: func(context.Context, string) (bool, string) { return false, "auth: refused" }}))
	if got != "FAIL connecting to 10.0.0.1:6379 (TLS) as user u: auth: refused\n" {
		t.Errorf("refused: %q", got)
	}
}
