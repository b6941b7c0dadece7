package locks

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
)

// testHost is the proxy's side of the seam for the tests: the undo
// scripts run on a real valkey-server at addr; what would be counted and
// recorded is kept to be read.
type testHost struct {
	addr string

	mu                           sync.Mutex
	granted, contended, released int
	events                       []telemetry.Event
}

func (h *testHost) Eval(key []byte, db int, script string, keys []string, args ...any) (int64, error) {
	c := redis.NewClient(&redis.Options{Addr: h.addr, DB: db, Protocol: 2})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Eval(ctx, script, keys, args...).Int64()
}

func (h *testHost) Own(net.Conn, int) {}

func (h *testHost) Contended(*rewrite.Effect, time.Time) {
	h.mu.Lock()
	h.contended++
	h.mu.Unlock()
}

func (h *testHost) Granted(*rewrite.Effect, time.Time) {
	h.mu.Lock()
	h.granted++
	h.mu.Unlock()
}

func (h *testHost) Released(*rewrite.Effect) {
	h.mu.Lock()
	h.released++
	h.mu.Unlock()
}

func (h *testHost) Record(ev telemetry.Event, _ *rewrite.Effect) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

// testClient is a session as the lock glue sees it.
type testClient struct{ g Grants }

func (c *testClient) Addr() string    { return "127.0.0.1:5555" }
func (c *testClient) Name() string    { return "app" }
func (c *testClient) Grants() *Grants { return &c.g }

// newTestKeeper is a Keeper on h, its undo goroutines in wg.
func newTestKeeper(h *testHost, wg *sync.WaitGroup) *Keeper {
	return New(h, slog.New(slog.NewTextHandler(io.Discard, nil)), wg, nil)
}
