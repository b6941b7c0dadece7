package main

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// check-upstream logs in as the proxy does: against a Valkey with
// requirepass it passes with the right password, the lock cycle through
// the proxy included (on 9ae0d55 the cycle's client never sent AUTH and
// got NOAUTH, a false FAIL), and fails naming the cause with a wrong one.
func TestCheckUpstreamRequirepass(t *testing.T) {
	srv := valkeytest.Start(t, "requirepass s3cret")
	conf := func(pass string) string {
		return writeConfig(t, fmt.Sprintf("upstream:\n  addr: %s\n  password: %s\nlocks:\n  - pattern: \"*:lock\"\n", srv.Addr, pass))
	}
	code, out, errs := runCLI("check-upstream", conf("s3cret"))
	if code != 0 || !strings.Contains(out, `ok: rule "*:lock": SET NX PX, PEXPIRE, DEL`) || strings.Contains(out, "FAIL") {
		t.Fatalf("with the right password, exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI("check-upstream", conf("wrong"))
	if code != 1 || !strings.Contains(out, "FAIL: connecting to "+srv.Addr) || !strings.Contains(out, "WRONGPASS") ||
		!strings.Contains(out, "upstream.password") {
		t.Fatalf("with a wrong password, exit %d\n%s%s", code, out, errs)
	}
}

// An ACL user that lacks one right lockproxy needs: check-upstream names
// it as ACL SETUSER spells it (on 9ae0d55 -select, -evalsha and
// -script|load passed, -eval was blamed on the lock cycle without a name).
func TestCheckUpstreamNamesTheMissingRight(t *testing.T) {
	for _, tc := range []struct {
		right string
		db    int
	}{
		{"+select", 3},
		{"+eval", 0},
		{"+evalsha", 0},
		{"+script|load", 0},
		{"+time", 0},
	} {
		t.Run(tc.right, func(t *testing.T) {
			srv := valkeytest.Start(t, "user lp on >pw ~* &* +@all -"+strings.TrimPrefix(tc.right, "+"))
			path := writeConfig(t, fmt.Sprintf("upstream:\n  addr: %s\n  username: lp\n  password: pw\n  db: %d\nlocks:\n  - pattern: \"*:lock\"\n", srv.Addr, tc.db))
			code, out, errs := runCLI("check-upstream", path)
			if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "lacks "+tc.right+":") {
				t.Fatalf("exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// Whatever Valkey does, check-upstream ends with a FAIL that says why: a
// listener that accepts and never answers, and TLS against a plaintext
// valkey-server. Its findings are all it prints: none of go-redis's own
// log lines. Asserted is only that it ended before a deadline far above
// its bound (dial_timeout 5 s plus a second); on 9ae0d55 they took 37 s and
// 20 s.
func TestCheckUpstreamBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, nc := range held {
				nc.Close()
			}
		}()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, nc)
		}
	}()
	srv := valkeytest.Start(t)
	for _, tc := range []struct{ name, upstream, want string }{
		{"hung", "addr: " + l.Addr().String(), "timeout: "},
		{"tls-to-plaintext", "addr: " + srv.Addr + "\n  tls:\n    enabled: true\n    insecure_skip_verify: true", "tls_mismatch: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, fmt.Sprintf("upstream:\n  %s\n  dial_timeout: 5s\nlocks:\n  - pattern: \"*:lock\"\n", tc.upstream))
			p := startMain(t, "check-upstream", path)
			select {
			case <-p.exited:
			case <-time.After(15 * time.Second): // a hang, not a slow machine
				t.Fatalf("check-upstream still running:\n%s", p.logs.String())
			}
			out := p.logs.String()
			if !strings.Contains(out, "FAIL: connecting to") || !strings.Contains(out, tc.want) {
				t.Fatalf("%s", out)
			}
			if strings.Contains(out, "redis: ") || strings.Contains(out, "go-redis") {
				t.Fatalf("go-redis's own lines in the output:\n%s", out)
			}
		})
	}
}

// A start against a Valkey that accepts and never answers does not wait
// silently: the failed probe is logged, with its reason and the setting
// that bounds it, before lockproxy listens (on 9ae0d55 nothing was logged
// until it listened, 20 s later with the defaults).
func TestStartLogsTheFirstFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, nc := range held {
				nc.Close()
			}
		}()
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, nc)
		}
	}()
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\n  dial_timeout: 1s\n", freeAddr(t), l.Addr()))
	lp := startMain(t, "--config", path)
	eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), "lockproxy listening") })
	logs := lp.logs.String()
	first := strings.Index(logs, `msg="Valkey is not answering"`)
	if first < 0 || first > strings.Index(logs, "lockproxy listening") ||
		!strings.Contains(logs[first:], "reason=timeout setting=upstream.dial_timeout") {
		t.Fatalf("the failed probe is not logged first, naming upstream.dial_timeout:\n%s", logs)
	}
}
