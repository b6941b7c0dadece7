package admin

import (
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/redis/go-redis/v9"
)

// testHost is a Host over one real Valkey (side), without a proxy: its
// rules, sessions and events are the test's.
type testHost struct {
	side     *redis.Client
	decider  *rewrite.Decider
	sessions []Session
	events   *telemetry.Ring
}

func (h *testHost) Decider() *rewrite.Decider   { return h.decider }
func (h *testHost) LoadTable() *rewrite.Decider { return h.decider }
func (h *testHost) NoTableText() string         { return "UPSTREAM no table" }
func (h *testHost) Events(n int, keep func(*telemetry.Event) bool) []telemetry.Event {
	return h.events.Recent(n, keep)
}
func (h *testHost) Stats() []telemetry.Line              { return nil }
func (h *testHost) SlowLog() *telemetry.SlowLog          { return nil }
func (h *testHost) Sessions() []Session                  { return h.sessions }
func (h *testHost) Map() *cluster.Map                    { return nil }
func (h *testHost) Side() *redis.Client                  { return h.side }
func (h *testHost) NodeClient(addr string) *redis.Client { panic("not a cluster") }
func (h *testHost) KeyClient([]byte) (*redis.Client, func()) {
	return h.side, func() {}
}
func (h *testHost) Timeout() time.Duration        { return 2 * time.Second }
func (h *testHost) Reload() (ReloadResult, error) { return ReloadResult{}, nil }

// testConn is a client connection with a fixed identity.
type testConn struct {
	id      uint64
	db      int
	proto   int
	owner   string
	missing *[]string // keys FoundMissing was told of, when not nil
}

func (c testConn) ID() uint64 { return c.id }
func (c testConn) DB() int    { return c.db }
func (c testConn) Proto() int {
	if c.proto == 0 {
		return 2
	}
	return c.proto
}
func (c testConn) Addr() string                { return "127.0.0.1:40000" }
func (c testConn) Host() string                { return "127.0.0.1" }
func (c testConn) Name() string                { return "" }
func (c testConn) Owner(r *policy.Rule) string { return c.owner }
func (c testConn) FoundMissing(key string) {
	if c.missing != nil {
		*c.missing = append(*c.missing, key)
	}
}

func configOf() config.Config { return config.Config{} }
