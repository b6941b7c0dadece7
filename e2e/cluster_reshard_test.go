package e2e_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/proxy"
)

// tagsInSlots returns one hash tag per slot of slots, in that order.
func tagsInSlots(slots []int) []string {
	want := map[uint16]int{}
	for i, s := range slots {
		want[uint16(s)] = i
	}
	tags := make([]string, len(slots))
	for n, found := 0, 0; found < len(slots); n++ {
		tag := "rs" + strconv.Itoa(n)
		if i, ok := want[cluster.Slot([]byte(tag))]; ok && tags[i] == "" {
			tags[i] = tag
			found++
		}
	}
	return tags
}

// valkey-cli --cluster reshard (the real tool) moves slots that hold locks,
// fence counters and fenced keys while clients acquire, write under their
// lock and release through the proxy: every command gets its reply (a
// TRYAGAIN, when the proxy's retries are spent while a lock's keys are on
// both nodes, means the command did not run, and is sent again), every
// fenced INCR is exact, a stranger never releases a lock, and a lock held
// across the whole move is released by its holder on the new node.
func TestClusterReshardUnderTraffic(t *testing.T) {
	e, cl := clusterEnv(t, func() proxy.Options {
		o := rulesOptions(t, "locks:\n  - pattern: \"{*}:mutex\"\n    fence:\n      counter: \"{base}:fence\"\n      guards: [\"{base}:data\"]\n      unfenced_writes: reject\n")
		o.Upstream.Cluster.Refresh = config.Duration(time.Hour) // only redirects tell the proxy
		return o
	}())
	m := slotMap(t, cl)
	src, dst := cl.ByAddr(m.Primaries[0]), cl.ByAddr(m.Primaries[1])
	const moved = 24 // valkey-cli moves the source's lowest slots
	var slots []int
	for s := 0; len(slots) < moved; s++ {
		if a, _ := m.Primary(uint16(s)); a == src.Addr {
			slots = append(slots, s)
		}
	}
	tags := tagsInSlots(slots[:9])
	heldTag := tags[8]
	tags = tags[:8]
	// Filler keys in every moving slot, so the move takes several batches.
	fill := dialRaw(t, e.addr)
	for i, tag := range tagsInSlots(slots) {
		for j := range 20 {
			eq(t, fill.do("SET", "{"+tag+"}:fill"+strconv.Itoa(j), strconv.Itoa(i)), "+OK\r\n")
		}
	}
	// A lock held across the whole move, and a stranger trying it.
	holder := dialRaw(t, e.addr)
	held := "{" + heldTag + "}:mutex"
	eq(t, holder.do("SET", held, "long", "NX", "PX", "120000"), "+OK\r\n")

	var stop atomic.Bool
	var mu sync.Mutex
	var failures []string
	fail := func(f string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(f, args...))
		}
	}
	var cycles, retries atomic.Int64
	// retry sends a command until it runs: a TRYAGAIN reply says it did not.
	retry := func(c *raw, args ...string) string {
		for {
			got := c.do(args...)
			if !strings.HasPrefix(got, "-TRYAGAIN") {
				return got
			}
			retries.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}
	counts := make([]int, len(tags))
	var wg sync.WaitGroup
	for w := range 4 {
		c := dialRaw(t, e.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; !stop.Load(); round++ {
				for i := w; i < len(tags); i += 4 {
					lock, data := "{"+tags[i]+"}:mutex", "{"+tags[i]+"}:data"
					tok := fmt.Sprintf("w%d-%d", w, round)
					if got := retry(c, "SET", lock, tok, "NX", "PX", "30000"); got != "+OK\r\n" {
						fail("worker %d SET %s NX: %q", w, lock, got)
						return
					}
					counts[i]++
					if got := retry(c, "INCR", data); got != ":"+strconv.Itoa(counts[i])+"\r\n" {
						fail("worker %d INCR %s: %q, want %d", w, data, got, counts[i])
						return
					}
					// A release in a slot being migrated must not touch a
					// key it deleted, which Valkey refuses inside a script
					// (see TestClusterMigratingSlotLockScripts).
					if got := retry(c, "DEL", lock); got != ":1\r\n" {
						fail("worker %d release %s: %q", w, lock, got)
						return
					}
					cycles.Add(1)
				}
			}
		}()
	}
	stranger := dialRaw(t, e.addr)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if got := stranger.do("DEL", held); !strings.HasPrefix(got, "-NOTOWNER") && !strings.HasPrefix(got, "-TRYAGAIN") {
				fail("stranger DEL %s: %q", held, got)
			}
			if got := stranger.do("INCR", "{"+heldTag+"}:data"); !strings.HasPrefix(got, "-UNFENCED") && !strings.HasPrefix(got, "-TRYAGAIN") {
				fail("stranger's unfenced INCR: %q", got)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	before := cycles.Load()
	err := cl.Reshard(src, dst, moved)
	during := cycles.Load() - before
	time.Sleep(300 * time.Millisecond) // on the old map: MOVED, followed
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failures {
		t.Error(f)
	}
	after := slotMap(t, cl)
	for _, s := range slots {
		if a, _ := after.Primary(uint16(s)); a != dst.Addr {
			t.Fatalf("slot %d is on %s after the reshard, not %s", s, a, dst.Addr)
		}
	}
	if during == 0 {
		t.Errorf("no lock cycle completed while valkey-cli moved the slots")
	}
	t.Logf("%d lock cycles, %d while resharding; %d TRYAGAIN replies sent again", cycles.Load(), during, retries.Load())
	for i, tag := range tags {
		eq(t, string(valkeytest.Dial(t, dst.Addr, 2).Do(t, "GET", "{"+tag+"}:data")), bulk(strconv.Itoa(counts[i])))
	}
	eq(t, holder.do("DEL", held), ":1\r\n") // the holder's release, on the new node
	info := holder.do("INFO", "lockproxy")
	if infoInt(t, info, "cluster_moved_followed")+infoInt(t, info, "cluster_ask_followed") == 0 {
		t.Errorf("no redirect followed during a reshard under traffic:\n%s", info)
	}
	// The slots back, for the other tests' maps (dst's lowest are ours now).
	if err := cl.Reshard(dst, src, moved); err != nil {
		t.Fatal(err)
	}
}
