package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// On SIGTERM, /readyz turns 503 at once while the client port still
// accepts new clients and serves them (and the ones already connected);
// only after drain_delay (here ended by a second SIGTERM, so that no clock
// decides the test) does the listener close and the process exit. On main
// the listener closed at the moment /readyz turned 503.
func TestSIGTERMDrainsBeforeClosing(t *testing.T) {
	srv := valkeytest.Start(t)
	listen, metricsAddr := freeAddr(t), freeAddr(t)
	// Longer than any test run: only the second signal ends the drain.
	path := writeConfig(t, fmt.Sprintf("listen: %s\ndrain_delay: 10m\nupstream:\n  addr: %s\nmetrics:\n  listen: %s\n", listen, srv.Addr, metricsAddr))
	lp := startMain(t, "--config", path)
	ctx := context.Background()
	old := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2})
	defer old.Close()
	eventually(t, "the proxy to answer", func() bool { return old.Ping(ctx).Err() == nil })
	eventually(t, "/readyz 200", func() bool { code, _ := httpGet(t, "http://"+metricsAddr+"/readyz"); return code == 200 })
	// The start-up line names every path of the metrics port (on main it
	// left out /livez).
	if !strings.Contains(lp.logs.String(), `msg="metrics endpoint listening" listen=`+metricsAddr+` paths="/metrics /livez /healthz /readyz"`) {
		t.Errorf("the metrics line does not list the paths:\n%s", lp.logs.String())
	}

	if err := lp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/readyz 503 draining", func() bool {
		code, body := httpGet(t, "http://"+metricsAddr+"/readyz")
		return code == 503 && strings.Contains(body, "draining")
	})
	// A client that arrives now is still accepted and served.
	nc := redis.NewClient(&redis.Options{Addr: listen, MaxRetries: -1, Protocol: 2})
	defer nc.Close()
	if err := nc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("a new client during the drain: %v\n%s", err, lp.logs.String())
	}
	if v, err := old.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("a connected client during the drain: %q %v", v, err)
	}
	if code, _ := httpGet(t, "http://"+metricsAddr+"/livez"); code != 200 {
		t.Fatalf("/livez during the drain: %d", code)
	}

	if err := lp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lp.exited:
	case <-time.After(30 * time.Second): // a hang, not a slow machine
		t.Fatalf("no exit after the second SIGTERM:\n%s", lp.logs.String())
	}
	if lp.err != nil {
		t.Fatalf("exit: %v\n%s", lp.err, lp.logs.String())
	}
	if c, err := net.Dial("tcp", listen); err == nil {
		c.Close()
		t.Fatal("the client port still accepts after the exit")
	}
	logs := lp.logs.String()
	d, e, s := strings.Index(logs, "msg=\"draining: /readyz answers 503"), strings.Index(logs, "msg=\"draining ended early\""), strings.Index(logs, "msg=\"shutting down: no new clients")
	if d < 0 || e < d || s < e {
		t.Fatalf("want the drain, its early end, then the shutdown, in that order:\n%s", logs)
	}
}

// With drain_delay: 0 the listener closes at SIGTERM, as before the
// setting existed; SIGINT (Ctrl-C at a terminal) skips any drain_delay.
// Neither logs a drain.
func TestDrainDelayZeroAndSIGINT(t *testing.T) {
	srv := valkeytest.Start(t)
	for _, tc := range []struct {
		drain string
		sig   syscall.Signal
	}{{"0s", syscall.SIGTERM}, {"10m", syscall.SIGINT}} {
		listen := freeAddr(t)
		lp := startMain(t, "--config", writeConfig(t, fmt.Sprintf("listen: %s\ndrain_delay: %s\nupstream:\n  addr: %s\n", listen, tc.drain, srv.Addr)))
		eventually(t, "lockproxy to listen", func() bool { return strings.Contains(lp.logs.String(), "lockproxy listening") })
		if err := lp.cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-lp.exited:
		case <-time.After(30 * time.Second): // far below the 10m drain
			t.Fatalf("drain_delay %s, %v: no exit:\n%s", tc.drain, tc.sig, lp.logs.String())
		}
		if strings.Contains(lp.logs.String(), "draining") {
			t.Fatalf("drain_delay %s, %v: drained:\n%s", tc.drain, tc.sig, lp.logs.String())
		}
	}
}

// A client or metrics port that is taken ends the start with a message
// naming the setting and what to do, before anything says "listening" (on
// main: a bare "bind: address already in use" after "lockproxy listening").
func TestBindClashNamesTheSetting(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	srv := valkeytest.Start(t)
	for _, tc := range []struct{ name, cfg, want string }{
		{"listen", fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\n", busy, srv.Addr),
			"lockproxy: listen " + busy + " cannot be listened on: listen tcp " + busy + ": bind: address already in use; another process listens there (another lockproxy, or Valkey?): stop it or choose another port in listen (or --listen)"},
		{"metrics.listen", fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\nmetrics:\n  listen: %s\n", freeAddr(t), srv.Addr, busy),
			"lockproxy: metrics.listen " + busy + " cannot be listened on: listen tcp " + busy + ": bind: address already in use; another process listens there (another lockproxy, or Valkey?): stop it or choose another port in metrics.listen"},
	} {
		lp := startMain(t, "--config", writeConfig(t, tc.cfg))
		select {
		case <-lp.exited:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no exit with the port taken:\n%s", tc.name, lp.logs.String())
		}
		logs := lp.logs.String()
		if lp.err == nil || !strings.Contains(logs, tc.want) {
			t.Errorf("%s: exit %v, want %q in:\n%s", tc.name, lp.err, tc.want, logs)
		}
		if strings.Contains(logs, "listening") {
			t.Errorf("%s: logged listening before failing:\n%s", tc.name, logs)
		}
	}
}

// lockproxy with no arguments prints the usage and exits 2 (on main it
// started a proxy with the defaults in the foreground).
func TestNoArgumentsPrintsUsage(t *testing.T) {
	code, out, errs := runCLI()
	if code != 2 || out != "" || !strings.Contains(errs, "usage:\n  lockproxy --config FILE") ||
		!strings.Contains(errs, "lockproxy: no arguments: to run the proxy, give --config FILE") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// A proxy started with a published password runs (lockproxy's own tests
// start so), but says at start which setting holds it.
func TestStartWarnsOfPublishedPassword(t *testing.T) {
	srv := valkeytest.Start(t)
	lp := startMain(t, "--config", writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\nadmin:\n  password: s3cret\n", freeAddr(t), srv.Addr)))
	eventually(t, "the warning", func() bool {
		return strings.Contains(lp.logs.String(), `level=WARN msg="configuration: admin.password: \"s3cret\" is a password published in lockproxy's tests or docs`)
	})
}
