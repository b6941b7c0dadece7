package rewrite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/keyspec"
)

// goldenCommand holds Valkey 8's COMMAND reply as go-redis v9 returns it
// under RESP2 (Do(ctx, "COMMAND").Slice()), encoded as JSON. The decision
// tests build their keyspec.Table from it, so they need no server. JSON
// turns the reply's int64s into float64s, which keyspec.FromCommandReply
// accepts (integral doubles are what a RESP3 reply may carry too).
const goldenCommand = "testdata/command-valkey8.json"

// TestUpdateGoldenCommand regenerates the golden COMMAND reply from a real
// server: LOCKPROXY_UPDATE_GOLDEN=1 go test -run TestUpdateGoldenCommand ./rewrite/
func TestUpdateGoldenCommand(t *testing.T) {
	if os.Getenv("LOCKPROXY_UPDATE_GOLDEN") != "1" {
		t.Skip("set LOCKPROXY_UPDATE_GOLDEN=1 to regenerate " + goldenCommand + " from valkey-server")
	}
	srv := valkeytest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	reply, err := rdb.Do(ctx, "COMMAND").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyspec.FromCommandReply(reply); err != nil {
		t.Fatalf("the server's own COMMAND reply does not load: %v", err)
	}
	data, err := json.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.FromSlash(goldenCommand), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	version := "version unknown"
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "valkey_version:") {
			version = l
		}
	}
	t.Logf("wrote %s: %d commands, %d bytes (%s)", goldenCommand, len(reply), len(data), version)
}

var (
	tableOnce sync.Once
	table     *keyspec.Table
	tableErr  error
)

// goldenTable is the command table of the golden COMMAND reply, loaded
// once per test binary.
func goldenTable(tb testing.TB) *keyspec.Table {
	tb.Helper()
	tableOnce.Do(func() {
		var data []byte
		if data, tableErr = os.ReadFile(filepath.FromSlash(goldenCommand)); tableErr != nil {
			return
		}
		var reply []interface{}
		if tableErr = json.Unmarshal(data, &reply); tableErr != nil {
			return
		}
		table, tableErr = keyspec.FromCommandReply(reply)
	})
	if tableErr != nil {
		tb.Fatalf("golden command table: %v (regenerate: LOCKPROXY_UPDATE_GOLDEN=1 go test -run TestUpdateGoldenCommand ./rewrite/)", tableErr)
	}
	return table
}
