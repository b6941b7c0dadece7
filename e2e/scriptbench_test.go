package e2e_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lockproxy/lockproxy/internal/libscripts"
	"github.com/redis/go-redis/v9"
)

// Issue 18, item 8: what a script acquisition and a scripted fenced write
// cost through the proxy (each run in its wrapper) against the same
// scripts sent directly. Compare the direct and proxy ns/op of each pair
// (make bench has the same rows from cmd/lockbench, as ratios).
func BenchmarkScriptAcquire(b *testing.B) {
	obtain, release := redis.NewScript(libscripts.RedislockObtain), redis.NewScript(libscripts.RedislockRelease)
	// The env's helpers take a *testing.T: its cleanups never run here,
	// so the server and proxy are stopped by hand.
	e := newEnv(&testing.T{}, rulesOptions(&testing.T{}, "locks:\n  - pattern: \"*:lock\"\n"))
	defer e.srv.Stop()
	defer e.stopProxy()
	benchScripts(b, e, func(c *redis.Client, w int64, i int) error {
		k, tok := fmt.Sprintf("bench:%d:lock", w), fmt.Sprint(i)
		if err := obtain.Run(ctx, c, []string{k}, tok, 0, 10000).Err(); err != nil {
			return err
		}
		return release.Run(ctx, c, []string{k}, tok).Err()
	}, nil)
}

func BenchmarkScriptFencedWrite(b *testing.B) {
	const write = `return redis.call('SET', KEYS[1], ARGV[1])`
	e := newEnv(&testing.T{}, rulesOptions(&testing.T{}, fenceRule("current", "allow")))
	defer e.srv.Stop()
	defer e.stopProxy()
	benchScripts(b, e, func(c *redis.Client, w int64, i int) error {
		return redis.NewScript(write).Run(ctx, c, []string{fmt.Sprintf("{b%d}:data", w)}, i).Err()
	}, func(c *redis.Client, w int64) error {
		return c.SetNX(ctx, fmt.Sprintf("{b%d}:lock", w), "holder", 0).Err()
	})
}

func benchScripts(b *testing.B, e *env, op func(*redis.Client, int64, int) error, setup func(*redis.Client, int64) error) {
	for _, side := range []struct {
		name, addr string
	}{{"direct", e.srv.Addr}, {"proxy", e.addr}} {
		b.Run(side.name, func(b *testing.B) {
			var worker atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				w := worker.Add(1)
				// One connection per worker: a holder is its connection.
				c := redis.NewClient(&redis.Options{Addr: side.addr, PoolSize: 1, Protocol: 2})
				defer c.Close()
				if setup != nil {
					if err := setup(c, w); err != nil {
						b.Error(err)
						return
					}
				}
				for i := 0; pb.Next(); i++ {
					if err := op(c, w, i); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
