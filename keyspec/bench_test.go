package keyspec

import (
	"context"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkKeys measures the hot path with the table of a real server:
// command lookup in mixed case plus the spec walk, appending into a reused
// dst. The target is zero allocations.
func BenchmarkKeys(b *testing.B) {
	srv := valkeytest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DisableIdentity: true})
	tab, err := Load(context.Background(), rdb)
	_ = rdb.Close()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		args [][]byte
	}{
		{"DEL", argv("DEL lock:orders:42")},
		{"SET_NX_PX", argv("set lock:orders:42 8f3a9c1e-token NX PX 30000")},
		{"GET", argv("Get lock:orders:42")},
		{"EVAL_1key", argv("EVALSHA 0123456789abcdef0123456789abcdef01234567 1 lock:orders:42 8f3a9c1e-token")},
		{"XREAD_2streams", argv("XREAD COUNT 10 BLOCK 0 STREAMS s1 s2 0 0")},
		{"CLIENT_TRACKING", argv("CLIENT TRACKING on")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dst := make([]Key, 0, 8)
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = tab.Keys(bc.args, dst[:0])
			}
		})
	}
}
