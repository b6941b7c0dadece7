package main

import (
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// Under systemd's Type=notify lockproxy says READY=1 once it accepts
// clients, RELOADING=1 and READY=1 around a SIGHUP reload, and STOPPING=1
// on SIGTERM (on main the unit was Type=exec and nothing was sent).
func TestSdNotify(t *testing.T) {
	srv := valkeytest.Start(t)
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	next := func() string {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang, not a slow machine
		buf := make([]byte, 256)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\n", freeAddr(t), srv.Addr))
	t.Setenv("NOTIFY_SOCKET", sock)
	lp := startMain(t, "--config", path)
	eq := func(got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	eq(next(), "READY=1")
	if err := lp.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eq(next(), "RELOADING=1")
	eq(next(), "READY=1")
	if err := lp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eq(next(), "STOPPING=1")
	<-lp.exited
}
