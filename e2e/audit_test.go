package e2e_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
	"github.com/redis/go-redis/v9"
)

// A stalled log and audit file do not hold up replies: while the log hangs,
// a client pipelining more refused lock commands than the event writer's
// queue holds gets every refusal, in order. LOCKPROXY AUDIT has every
// event at once; the lines that did not fit in the queue are counted as
// dropped in INFO, LOCKPROXY STATS and /metrics; once the log moves again,
// every event not dropped is logged and in the audit file, in order.
func TestStalledEventLogDoesNotStallReplies(t *testing.T) {
	eachEngine(t, func(t *testing.T, o proxy.Options) {
		const n = 6000 // more than the writer's queue (4096)
		const queue = 4096
		h := &logRecorder{msg: "lock event", attr: "key", hold: make(chan struct{})}
		released := false
		release := func() {
			if !released {
				released = true
				close(h.hold)
			}
		}
		file := filepath.Join(t.TempDir(), "audit.jsonl")
		e := newEnv(t, rulesOptions(t, rule("rewrite"), func(po *proxy.Options) {
			po.EventLoops, po.BusyPoll = o.EventLoops, o.BusyPoll
			po.Logger = slog.New(h)
			po.Log.AuditFile = file
		}))
		// Registered after the proxy's, so it runs before the proxy's
		// shutdown, which waits for the stalled log.
		t.Cleanup(release)

		// n blind DELs of locks this client never took: each is refused,
		// and each refusal is a lock event.
		c := dialRaw(t, e.addr)
		var batch []byte
		for i := range n {
			batch = append(batch, redisCmd("DEL", fmt.Sprintf("k%d:lock", i))...)
		}
		c.send(string(batch))
		for i := range n {
			got, err := c.readErr(replyDeadline)
			if err != nil {
				t.Fatalf("reply %d of %d with the event log stalled: %v", i, n, err)
			}
			if !strings.HasPrefix(got, "-NOTOWNER") || !strings.Contains(got, fmt.Sprintf(`"k%d:lock"`, i)) {
				t.Fatalf("reply %d: %q, want the NOTOWNER refusal of k%d:lock", i, got, i)
			}
		}

		// The audit ring is kept on the reply path: complete at once.
		evs := e.p.Events(n)
		if len(evs) < 1000 || evs[0].Key != fmt.Sprintf("k%d:lock", n-1) {
			t.Fatalf("LOCKPROXY AUDIT: %d events, newest %+v; want the last refusal first", len(evs), evs[0])
		}

		// One event is in the stalled writer's hands, queue more are waiting;
		// the rest were dropped, and said to be.
		stats := rec(t, admin(t, e.client(), "STATS"))
		dropped, _ := strconv.Atoi(stats["audit_events_dropped"])
		if dropped < n-queue-1 || dropped > n-queue {
			t.Fatalf("LOCKPROXY STATS audit_events_dropped = %q, want %d or %d", stats["audit_events_dropped"], n-queue-1, n-queue)
		}
		info := e.client().Info(ctx, "lockproxy").Val()
		mustContain(t, info, "audit_events_dropped:"+strconv.Itoa(dropped)+"\r\n")
		eq(t, metrics(t, e)["lockproxy_audit_events_dropped_total"], float64(dropped))

		// The log moves again; shutdown writes what was queued.
		release()
		e.stopProxy()
		h.mu.Lock()
		logged := h.vals
		h.mu.Unlock()
		if len(logged) != n-dropped {
			t.Fatalf("%d events logged, want %d (%d events, %d dropped)", len(logged), n-dropped, n, dropped)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var filed []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev struct{ Key string }
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("audit line %q: %v", l, err)
			}
			filed = append(filed, ev.Key)
		}
		if len(filed) != len(logged) {
			t.Fatalf("%d audit-file lines, %d log lines: the file and the log saw different events", len(filed), len(logged))
		}
		// In the order the events happened: the first one, then a run with
		// a gap where the queue was full.
		last := -1
		for j, k := range logged {
			i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(k, "k"), ":lock"))
			if i <= last || filed[j] != k {
				t.Fatalf("line %d: log %q, file %q after k%d:lock: out of order", j, k, filed[j], last)
			}
			last = i
		}
		eq(t, logged[0], "k0:lock")
	})
}

// With nothing slow, nothing is dropped: every event reaches the log.
func TestEventLogKeepsUpWhenNotStalled(t *testing.T) {
	lc := &logRecorder{msg: "lock event"}
	e := newEnv(t, rulesOptions(t, rule("rewrite"), func(po *proxy.Options) { po.Logger = slog.New(lc) }))
	c := e.client(func(o *redis.Options) { o.PoolSize = 1 })
	const n = 200
	for i := range n {
		if err := c.Del(ctx, fmt.Sprintf("k%d:lock", i)).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOTOWNER") {
			t.Fatalf("DEL %d: %v, want NOTOWNER", i, err)
		}
	}
	e.stopProxy()
	lc.mu.Lock()
	defer lc.mu.Unlock()
	eq(t, lc.n, n)
}
