package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// The test binary runs lockproxy's main when asked to, so the tests below
// can send real signals to a real process.
func TestMain(m *testing.M) {
	if args := os.Getenv("LOCKPROXY_TEST_MAIN"); args != "" {
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(valkeytest.FreePort(t)))
}

// proc is lockproxy's main running in a child process (the test binary).
type proc struct {
	cmd    *exec.Cmd
	logs   syncBuffer
	exited chan struct{} // closed when the process has exited; then err is set
	err    error
}

// startMain runs lockproxy with args in a child process, killed when the
// test ends if it is still running.
func startMain(t *testing.T, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{exited: make(chan struct{})}
	p.cmd = exec.Command(exe, "-test.run=^$")
	p.cmd.Env = append(os.Environ(), "LOCKPROXY_TEST_MAIN="+strings.Join(args, "\n"))
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGHUP reloads the file: a good one applies, a broken one is logged with
// its line and changes nothing; /metrics, /healthz and /readyz answer on
// metrics.listen; SIGTERM still shuts down cleanly.
func TestSIGHUPReloadAndMetricsListener(t *testing.T) {
	srv := valkeytest.Start(t)
	listen, metricsAddr := freeAddr(t), freeAddr(t)
	path := filepath.Join(t.TempDir(), "lockproxy.yaml")
	base := fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\nmetrics:\n  listen: %s\nlocks:\n  - pattern: \"*:lock\"\n", listen, srv.Addr, metricsAddr)
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(base)

	lp := startMain(t, "--config", path)
	cmd, logs := lp.cmd, &lp.logs

	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	eventually(t, "the proxy to answer", func() bool { return c.Ping(ctx).Err() == nil })
	stat := func(name string) string {
		v, err := c.Do(ctx, "LOCKPROXY", "STATS").Slice()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(v); i += 2 {
			if v[i] == name {
				return fmt.Sprint(v[i+1])
			}
		}
		t.Fatalf("no %s in STATS", name)
		return ""
	}
	get := func(p string) (int, string) {
		res, err := http.Get("http://" + metricsAddr + p)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get("/metrics")
	if code != 200 || !strings.Contains(body, "\nlockproxy_lock_rules 1\n") {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz: %d", code)
	}

	write(base + "  - pattern: \"*:mutex\"\n    release: reject\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload", func() bool { return stat("config_reloads") == "1" })
	if got := stat("lock_rules"); got != "2" {
		t.Fatalf("lock_rules %s after reload", got)
	}
	if err := c.Do(ctx, "SET", "m:mutex", "t", "NX", "PX", "5000").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, "m:mutex").Err(); err == nil || !strings.HasPrefix(err.Error(), "TOKENRELEASE") {
		t.Fatalf("DEL under the reloaded rule: %v", err)
	}

	write(base + "  - pattern: \"*:mutex\"\n    release: never\n")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed reload", func() bool { return stat("config_reload_failures") == "1" })
	if got := stat("lock_rules"); got != "2" {
		t.Fatalf("lock_rules %s after a failed reload", got)
	}
	// The failure is counted before it is logged, and the log comes
	// through a pipe: wait for the line rather than read at once.
	bad := path + `:9: locks[1].release: \"never\" is not one of rewrite, reject, observe`
	eventually(t, "the log line naming the bad line", func() bool { return strings.Contains(logs.String(), bad) })

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lp.exited:
		if lp.err != nil {
			t.Fatalf("exit: %v\n%s", lp.err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}

// admin.users in the file reach the proxy: a read user reports but cannot
// reload, and INFO lockproxy needs a login.
func TestAdminUsersFromFile(t *testing.T) {
	srv := valkeytest.Start(t)
	listen := freeAddr(t)
	path := filepath.Join(t.TempDir(), "lockproxy.yaml")
	cfg := fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\nadmin:\n  users:\n    - {name: viewer, password: v1ew}\n", listen, srv.Addr)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startMain(t, "--config", path)
	c := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, PoolSize: 1, Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	eventually(t, "the proxy to answer", func() bool { return c.Ping(ctx).Err() == nil })
	errText := func(args ...any) string {
		err := c.Do(ctx, args...).Err()
		if err == nil {
			return ""
		}
		return err.Error()
	}
	if got := errText("INFO", "lockproxy"); !strings.HasPrefix(got, "NOAUTH INFO lockproxy requires LOCKPROXY AUTH <user> <password>") {
		t.Fatalf("INFO lockproxy before AUTH: %q", got)
	}
	if got := errText("LOCKPROXY", "AUTH", "viewer", "v1ew"); got != "" {
		t.Fatalf("AUTH viewer: %q", got)
	}
	if got := errText("LOCKPROXY", "STATS"); got != "" {
		t.Fatalf("STATS as viewer: %q", got)
	}
	if got := errText("LOCKPROXY", "RELOAD"); !strings.HasPrefix(got, "NOPERM") {
		t.Fatalf("RELOAD as viewer: %q", got)
	}
}
