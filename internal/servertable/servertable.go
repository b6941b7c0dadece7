// Package servertable loads a real server's COMMAND table for tests (proxy,
// scriptcheck): a test kit, like valkeytest, so it takes a *testing.T and
// skips the test when the server binary is not installed. No non-test code
// imports it.
package servertable

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/redis/go-redis/v9"
)

// Load starts a fresh server of the given binary (valkey-server,
// redis-server) and loads its COMMAND table; the test is skipped when the
// binary is not installed.
func Load(t *testing.T, bin string) *keyspec.Table {
	t.Helper()
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("%s not installed: %v", bin, err)
	}
	t.Setenv("LOCKPROXY_TEST_SERVER", bin)
	srv := valkeytest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tab, err := keyspec.Load(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}
