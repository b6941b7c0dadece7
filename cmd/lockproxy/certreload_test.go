package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
)

// servedCN is the common name of the certificate the listener at addr
// presents now.
func servedCN(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return ""
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// SIGHUP reads the TLS files again: a renewed certificate is served to new
// clients without a restart (on main it needed one).
func TestSIGHUPReloadsCertificates(t *testing.T) {
	srv := valkeytest.Start(t)
	dir := t.TempDir()
	oldCert, oldKey := selfSigned(t, dir, "first")
	listen := freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("listen: %s\nupstream:\n  addr: %s\ntls:\n  cert_file: %s\n  key_file: %s\n", listen, srv.Addr, oldCert, oldKey))
	lp := startMain(t, "--config", path)
	eventually(t, "the first certificate", func() bool { return servedCN(t, listen) == "first" })

	newCert, newKey := selfSigned(t, dir, "second")
	for from, to := range map[string]string{newCert: oldCert, newKey: oldKey} {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	if err := lp.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the renewed certificate", func() bool { return servedCN(t, listen) == "second" })

	// A broken file keeps the certificate in use, and says why.
	if err := os.WriteFile(filepath.Join(dir, "first.key"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := lp.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the failed reload", func() bool { return strings.Contains(lp.logs.String(), "configuration reload failed") })
	if cn := servedCN(t, listen); cn != "second" {
		t.Fatalf("after a failed reload the listener serves %q", cn)
	}
}
