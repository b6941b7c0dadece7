package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// writeConfig writes a configuration file for one test and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lockproxy.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// upstream.tls.enabled against a plaintext Valkey: lockproxy starts (with
// lock rules, whose command table it cannot read), a client's command gets
// an error that names the mismatch, the log says it at ERROR naming the
// setting, /readyz and lockproxy_upstream_up give the reason, and SIGTERM
// ends the process. On main it never listened (the side client's TLS
// handshake had no deadline).
func TestTLSAgainstPlaintextUpstream(t *testing.T) {
	srv := valkeytest.Start(t)
	listen, metricsAddr := freeAddr(t), freeAddr(t)
	path := writeConfig(t, fmt.Sprintf(`listen: %s
shutdown_timeout: 1s
upstream:
  addr: %s
  dial_timeout: 1s
  tls:
    enabled: true
    insecure_skip_verify: true
metrics:
  listen: %s
locks:
  - pattern: "*:lock"
`, listen, srv.Addr, metricsAddr))
	lp := startMain(t, "--config", path)
	eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), "lockproxy listening") })

	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	if err == nil || !strings.Contains(err.Error(), "does not speak TLS") || !strings.Contains(err.Error(), "upstream.tls.enabled") {
		t.Fatalf("PING: %v\n%s", err, lp.logs.String())
	}
	eventually(t, "the ERROR line naming the setting", func() bool {
		for _, l := range strings.Split(lp.logs.String(), "\n") {
			if strings.Contains(l, "level=ERROR") && strings.Contains(l, "setting=upstream.tls.enabled") && strings.Contains(l, "reason=tls_mismatch") {
				return true
			}
		}
		return false
	})
	if code, body := httpGet(t, "http://"+metricsAddr+"/readyz"); code != 503 || !strings.Contains(body, "tls_mismatch: upstream.tls.enabled is true but Valkey at") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	if _, body := httpGet(t, "http://"+metricsAddr+"/metrics"); !strings.Contains(body, `lockproxy_upstream_up{reason="tls_mismatch"} 0`) {
		t.Fatalf("/metrics has no upstream_up with the reason:\n%s", body)
	}
	if code, _ := httpGet(t, "http://"+metricsAddr+"/livez"); code != 200 {
		t.Fatalf("/livez: %d", code)
	}
	if err := lp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lp.exited:
	case <-time.After(30 * time.Second): // a hang, not a slow machine
		t.Fatalf("no exit after SIGTERM:\n%s", lp.logs.String())
	}
}

// The other way round: a plaintext upstream setting against a TLS-only
// Valkey is reported as a mismatch, not as a lost connection.
func TestPlaintextAgainstTLSUpstream(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	port := valkeytest.FreePort(t)
	srv := valkeytest.Start(t, fmt.Sprintf("tls-port %d", port), "tls-cert-file "+cert, "tls-key-file "+key, "tls-auth-clients no")
	tlsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	_ = srv
	listen := freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\n  dial_timeout: 1s\n", listen, tlsAddr))
	lp := startMain(t, "--config", path)
	eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), "lockproxy listening") })
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	if err == nil || !strings.Contains(err.Error(), "speaks TLS on that port, but upstream.tls.enabled is false") {
		t.Fatalf("PING: %v\n%s", err, lp.logs.String())
	}
}

// With log.format: json every line lockproxy writes is JSON, go-redis's
// included, and durations are readable ("1s", not 1000000000). On main
// go-redis wrote its own plain lines and durations were nanoseconds.
func TestJSONLogsOnly(t *testing.T) {
	listen := freeAddr(t)
	path := writeConfig(t, fmt.Sprintf(`listen: %s
shutdown_timeout: 1s
log:
  format: json
upstream:
  addr: %s
  dial_timeout: 1s
locks:
  - pattern: "*:lock"
`, listen, freeAddr(t)))
	lp := startMain(t, "--config", path)
	eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), `"msg":"lockproxy listening"`) })
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	defer c.Close()
	_ = c.Ping(context.Background()).Err()
	if err := lp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-lp.exited
	logs := lp.logs.String()
	sawRedis := false
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not JSON: %s", l)
			continue
		}
		sawRedis = sawRedis || m["component"] == "go-redis"
		if m["msg"] == "shutting down: no new clients; finishing replies in flight" && m["deadline"] != "1s" {
			t.Errorf("deadline not readable: %s", l)
		}
	}
	if !sawRedis {
		t.Errorf("no go-redis line went through slog:\n%s", logs)
	}
	if !strings.Contains(logs, `"deadline":"1s"`) {
		t.Errorf("no readable shutdown deadline:\n%s", logs)
	}
}

// A wrong upstream.password: check-upstream says so and exits 1, and the
// proxy logs it at ERROR naming the settings, with lockproxy_upstream_up's
// reason auth (on main: one WARN, and the clients' commands failed).
func TestWrongPasswordReported(t *testing.T) {
	srv := valkeytest.Start(t, "requirepass right")
	listen, metricsAddr := freeAddr(t), freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\n  password: wrong\nmetrics:\n  listen: %s\nlocks:\n  - pattern: \"*:lock\"\n", listen, srv.Addr, metricsAddr))
	code, out, _ := runCLI("check-upstream", path)
	if code != 1 || !strings.Contains(out, "FAIL: connecting to "+srv.Addr+" (plaintext) as user default: auth: Valkey at "+srv.Addr+" answered WRONGPASS") ||
		!strings.Contains(out, "upstream.password") {
		t.Fatalf("check-upstream: exit %d\n%s", code, out)
	}
	lp := startMain(t, "--config", path)
	eventually(t, "the ERROR line", func() bool {
		for _, l := range strings.Split(lp.logs.String(), "\n") {
			if strings.Contains(l, "level=ERROR") && strings.Contains(l, "reason=auth") && strings.Contains(l, "upstream.password") {
				return true
			}
		}
		return false
	})
	eventually(t, "the metrics endpoint", func() bool { return strings.Contains(lp.logs.String(), "metrics endpoint listening") })
	if _, body := httpGet(t, "http://"+metricsAddr+"/metrics"); !strings.Contains(body, `lockproxy_upstream_up{reason="auth"} 0`) {
		t.Fatalf("/metrics:\n%s", body)
	}
}

// check-upstream against a Valkey that lets the proxy do everything.
func TestCheckUpstreamOK(t *testing.T) {
	srv := valkeytest.Start(t)
	path := writeConfig(t, fmt.Sprintf("upstream:\n  addr: %s\nlocks:\n  - pattern: \"*:lock\"\n", srv.Addr))
	code, out, errs := runCLI("check-upstream", path)
	if code != 0 || !strings.Contains(out, path+": ok") || !strings.Contains(out, `ok: rule "*:lock": SET NX PX, PEXPIRE, DEL of "lockproxy-check-upstream:lock" through lockproxy`) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// With Sentinel, errors name the master, not upstream.addr's unused default
// 127.0.0.1:6379 (as they did on main).
func TestSentinelErrorsNameTheMaster(t *testing.T) {
	listen := freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  dial_timeout: 200ms\n  sentinel:\n    master: mymaster\n    addrs: [%q]\n", listen, freeAddr(t)))
	lp := startMain(t, "--config", path)
	eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), "lockproxy listening") })
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	if err == nil || !strings.Contains(err.Error(), `Sentinel master "mymaster"`) || strings.Contains(err.Error(), "127.0.0.1:6379") {
		t.Fatalf("PING: %v", err)
	}
	if strings.Contains(lp.logs.String(), "127.0.0.1:6379") {
		t.Fatalf("the log names the default address:\n%s", lp.logs.String())
	}
}

// Failed dials and lost connections are counted by reason: a stopped
// Valkey gives unreachable (on main there was no such counter).
func TestUpstreamErrorsCounted(t *testing.T) {
	srv := valkeytest.Start(t)
	listen, metricsAddr := freeAddr(t), freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\nmetrics:\n  listen: %s\n", listen, srv.Addr, metricsAddr))
	lp := startMain(t, "--config", path)
	eventually(t, "the metrics endpoint", func() bool { return strings.Contains(lp.logs.String(), "metrics endpoint listening") })
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, body := httpGet(t, "http://"+metricsAddr+"/metrics"); !strings.Contains(body, `lockproxy_upstream_errors_total{reason="unreachable"} 0`) {
		t.Fatalf("no zero series:\n%s", body)
	}
	srv.Stop()
	_ = c.Ping(ctx).Err() // the connection lost
	_ = c.Ping(ctx).Err() // the dial refused
	eventually(t, "the failures counted", func() bool {
		_, body := httpGet(t, "http://"+metricsAddr+"/metrics")
		return !strings.Contains(body, `lockproxy_upstream_errors_total{reason="unreachable"} 0`)
	})
}

// A CA that did not sign Valkey's certificate: named as a certificate
// problem with the setting, in the client's error and at ERROR in the log
// (on main: a plain handshake error and one WARN).
func TestWrongCAReported(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir, "valkey")
	otherCA, _ := selfSigned(t, dir, "other")
	port := valkeytest.FreePort(t)
	valkeytest.Start(t, fmt.Sprintf("tls-port %d", port), "tls-cert-file "+cert, "tls-key-file "+key, "tls-auth-clients no")
	listen := freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: 127.0.0.1:%d\n  tls:\n    enabled: true\n    ca_file: %s\n", listen, port, otherCA))
	lp := startMain(t, "--config", path)
	eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), "lockproxy listening") })
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2, ReadTimeout: time.Minute})
	defer c.Close()
	err := c.Ping(context.Background()).Err()
	if err == nil || !strings.Contains(err.Error(), "lockproxy does not trust the certificate of Valkey") || !strings.Contains(err.Error(), "upstream.tls.ca_file") {
		t.Fatalf("PING: %v", err)
	}
	eventually(t, "the ERROR line", func() bool {
		for _, l := range strings.Split(lp.logs.String(), "\n") {
			if strings.Contains(l, "level=ERROR") && strings.Contains(l, "reason=certificate") && strings.Contains(l, "setting=upstream.tls.ca_file") {
				return true
			}
		}
		return false
	})
}

// A user whose keys leave out the locks' index: lock commands work (the
// index is written when it may be), so check-upstream's cycle passes, and
// it says the index cannot be read, naming the key pattern to add.
func TestCheckUpstreamNamesTheIndexRight(t *testing.T) {
	srv := valkeytest.Start(t, "user narrow on >pw resetkeys ~*:lock ~{*:lock}:lockproxy:* resetchannels +@all")
	path := writeConfig(t, fmt.Sprintf("upstream:\n  addr: %s\n  username: narrow\n  password: pw\nlocks:\n  - pattern: \"*:lock\"\n", srv.Addr))
	code, out, errs := runCLI("check-upstream", path)
	if code != 1 || !strings.Contains(out, `ok: rule "*:lock": SET NX PX, PEXPIRE, DEL`) ||
		!strings.Contains(out, `FAIL: rule "*:lock": reading the locks' index`) || !strings.Contains(out, "~*:lockproxy:index") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}
