package e2e_test

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"

	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// BenchmarkPlainPipelineP16 is make bench's plain P16 row in one process:
// one client sends 16 GETs in one write and reads the 16 replies, through
// the proxy. It reports the time and the heap allocations per command of
// the whole process (the client allocates nothing per batch, so they are
// the proxy's): the per-command accounting must add none. It is a
// measurement, not a check: compare builds by running it on each.
func BenchmarkPlainPipelineP16(b *testing.B) {
	e := newEnv(&testing.T{}, proxy.Options{})
	defer e.srv.Stop()
	defer e.stopProxy()
	nc, err := net.Dial("tcp", e.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	set := resp.AppendCommandStrings(nil, "SET", "k", "v")
	if _, err := nc.Write(set); err != nil {
		b.Fatal(err)
	}
	ok := make([]byte, 5)
	if _, err := io.ReadFull(nc, ok); err != nil || string(ok) != "+OK\r\n" {
		b.Fatalf("SET: %q %v", ok, err)
	}
	const depth = 16
	batch := bytes.Repeat(resp.AppendCommandStrings(nil, "GET", "k"), depth)
	want := bytes.Repeat([]byte("$1\r\nv\r\n"), depth)
	got := make([]byte, len(want))
	round := func() {
		if _, err := nc.Write(batch); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, got); err != nil || !bytes.Equal(got, want) {
			b.Fatalf("replies %q, %v", got, err)
		}
	}
	for range 1000 {
		round() // warm: buffers and rings at their size
	}
	var before, after runtime.MemStats
	var ru0, ru1 syscall.Rusage
	runtime.ReadMemStats(&before)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for b.Loop() {
		round()
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	runtime.ReadMemStats(&after)
	commands := float64(b.N * depth)
	cpu := func(r *syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/commands, "ns/command")
	// CPU time of proxy and client together: less moved by a busy
	// machine than the wall clock.
	b.ReportMetric(float64(cpu(&ru1)-cpu(&ru0))/commands, "cpu-ns/command")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/commands, "allocs/command")
}
