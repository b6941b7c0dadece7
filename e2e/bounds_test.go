package e2e_test

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	rtmetrics "runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/proxy"
	"github.com/lockproxy/lockproxy/resp"
)

// Resource bounds, each proven with a figure. The proxy runs in this test
// process, so its memory is read with runtime.ReadMemStats: HeapInuse after
// a GC is the live heap of proxy and test together (the test's own share —
// client sockets — is small and counted against the proxy, which only makes
// the bounds stricter). Goroutine stacks are reported apart (StackInuse).
//
// Documented figures (asserted below; the measured values are logged):
//   - 1,000 slow-loris clients, each holding half a command: heap grows by
//     less than 40 MiB (under 40 KiB per client: a 16 KiB read buffer and
//     the session), stacks by less than 24 MiB.
//   - a client that announces a 2 GiB bulk: refused at once by the default
//     proto-max-bulk-len (512 MiB); with that limit raised and the query
//     buffer limit at 8 MiB, cut off after about 8 MiB with the heap never
//     more than 32 MiB above where it started.
//   - a client that never reads 128 MiB of replies: disconnected once
//     client_output_buffer_limit (16 MiB here) is held for it (queued, or in the
//     batch the writer is blocked on); HeapInuse peak — garbage not yet
//     collected, and the upstream read buffer with a 1 MiB reply in it,
//     included — under 1.5x that limit; another client on the same upstream
//     connection keeps getting its replies.
//   - MaxPipeline 64: never more than 64 of one client's commands in flight
//     upstream, however many it pipelines.

func heapAfterGC() (heap, stack uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.StackInuse
}

// liveAfterGC is the heap the objects still reachable occupy (the runtime's
// /gc/heap/live:bytes right after a collection).
func liveAfterGC() uint64 {
	runtime.GC()
	m := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(m)
	return m[0].Value.Uint64()
}

// heapPeak samples HeapInuse until stopped and returns the highest value.
// With gc, each sample is the live heap after a collection (liveAfterGC)
// instead: HeapInuse also counts what was allocated, and may already be
// garbage, between the collection and the sample.
func heapPeak(gc bool) (stop func() uint64) {
	done := make(chan struct{})
	res := make(chan uint64)
	every := 5 * time.Millisecond
	if gc {
		every = 20 * time.Millisecond
	}
	go func() {
		var peak uint64
		var m runtime.MemStats
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if gc {
				peak = max(peak, liveAfterGC())
			} else {
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
			select {
			case <-done:
				res <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-res }
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func delta(after, before uint64) uint64 {
	if after < before {
		return 0
	}
	return after - before
}

func waitClients(t *testing.T, e *env, n int64, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for e.p.Clients() != n {
		if time.Since(start) > within {
			t.Fatalf("%d clients after %v, want %d", e.p.Clients(), within, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// 1,000 clients each send half a command and stop. The proxy holds them all
// in bounded memory, still serves others, refuses the client past
// maxclients, and gives the memory back when they leave.
func TestBoundSlowLorisClients(t *testing.T) {
	const n = 1000
	e := newEnv(t, proxy.Options{Config: config.Config{MaxClients: n + 1}})
	warm := dialRaw(t, e.addr)
	eq(t, warm.do("PING"), "+PONG\r\n") // the pool's connections are open
	warm.nc.Close()
	waitClients(t, e, 0, 5*time.Second)
	heap0, stack0 := heapAfterGC()
	half := []byte("*3\r\n$3\r\nSET\r\n$5\r\nloris\r\n$10\r\nhalf")
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		nc, err := net.DialTimeout("tcp", e.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write(half); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	waitClients(t, e, n, 20*time.Second)
	time.Sleep(300 * time.Millisecond) // every session has read its half command
	heap1, stack1 := heapAfterGC()
	dh, ds := delta(heap1, heap0), delta(stack1, stack0)
	t.Logf("%d slow-loris clients: heap +%s (%.1f KiB per client), goroutine stacks +%s (%.1f KiB per client)",
		n, mib(dh), float64(dh)/n/1024, mib(ds), float64(ds)/n/1024)
	if dh > 40<<20 {
		t.Errorf("heap grew by %s for %d half-sent commands, bound 40 MiB", mib(dh), n)
	}
	if ds > 24<<20 {
		t.Errorf("stacks grew by %s for %d clients, bound 24 MiB", mib(ds), n)
	}

	// Others are still served, up to maxclients; the next one is refused.
	ok := dialRaw(t, e.addr)
	eq(t, ok.do("SET", "k", "v"), "+OK\r\n")
	refused := dialRaw(t, e.addr)
	eq(t, refused.read(), "-ERR max number of clients reached\r\n")
	refused.expectClosed()
	t.Logf("client %d served, client %d refused with \"max number of clients reached\"", n+1, n+2)

	for _, c := range conns {
		c.Close()
	}
	conns = nil
	took := waitClients(t, e, 1, 10*time.Second)
	heap2, _ := heapAfterGC()
	t.Logf("after the %d left (%v): heap %s above the start", n, took.Round(time.Millisecond), mib(delta(heap2, heap0)))
	if delta(heap2, heap0) > 8<<20 {
		t.Errorf("heap still %s above the start after every slow client left", mib(delta(heap2, heap0)))
	}
}

// With client_idle_timeout, slow-loris clients are closed by the proxy, and
// none before its idle timeout: each close is timed from before that
// client's dial, a moment that precedes the proxy's idle clock for it, so a
// loaded machine can only make the interval longer. A client that keeps
// talking or waits for a reply is not idle.
func TestBoundSlowLorisIdleTimeout(t *testing.T) {
	const n = 200
	const idle = 300 * time.Millisecond
	e := newEnv(t, proxy.Options{Config: config.Config{ClientIdleTimeout: config.Duration(idle)}})
	type loris struct {
		nc     net.Conn
		dialed time.Time
	}
	var conns []loris
	defer func() {
		for _, c := range conns {
			c.nc.Close()
		}
	}()
	for i := 0; i < n; i++ {
		dialed := time.Now()
		nc, err := net.DialTimeout("tcp", e.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, loris{nc, dialed})
		nc.Write([]byte("*2\r\n$3\r\nGET\r\n$3\r\nk"))
	}
	var wg sync.WaitGroup
	var early atomic.Int64
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			rest, err := io.ReadAll(c.nc)
			closed := time.Since(c.dialed)
			switch {
			case err != nil && !isReset(err):
				t.Errorf("client %d: not closed by the proxy: %v (read %q)", i, err, rest)
			case closed < idle:
				early.Add(1)
				t.Errorf("client %d: closed %v after it dialled, before client_idle_timeout %v", i, closed, idle)
			}
		}()
	}
	wg.Wait()
	waitClients(t, e, 0, 30*time.Second)
	t.Logf("%d half-sent commands, client_idle_timeout %v: every one closed by the proxy, %d before the timeout", n, idle, early.Load())

	// A client blocked in BLPOP longer than the idle timeout waits for a
	// reply, so it is not idle: it gets its nil, then goes on.
	b := dialRaw(t, e.addr)
	eq(t, b.do("BLPOP", "empty", "1"), "*-1\r\n")
	eq(t, b.do("PING"), "+PONG\r\n")

	// A client that keeps talking is not idle. Should it be closed anyway,
	// it must have been silent for the whole timeout, measured from before
	// its last command was sent (a stall of the test itself can make that
	// happen; it is then not the proxy's fault).
	talked := time.Now()
	r := dialRaw(t, e.addr)
	for i := 0; i < 40; i++ {
		sent := time.Now()
		got, err := r.readErrDo(30*time.Second, "PING")
		if err != nil {
			if gap := time.Since(talked); gap < idle {
				t.Fatalf("a talking client was closed %v after its previous command, before client_idle_timeout %v: %v", gap, idle, err)
			}
			t.Logf("the talking client was itself silent past the idle timeout (a stalled test); closed as it should be")
			return
		}
		eq(t, got, "+PONG\r\n")
		talked = sent
		time.Sleep(idle / 10)
	}
}

// A client announces a 2 GiB bulk and trickles bytes. By default the
// announcement alone is refused (proto-max-bulk-len 512 MiB). With the bulk
// limit raised, the query buffer limit cuts the client off; either way the
// proxy's memory follows the bytes that arrived, never the announced length.
func TestBoundHugeBulkAnnounced(t *testing.T) {
	const announce = "*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$2147483648\r\n"
	t.Run("default_limits", func(t *testing.T) {
		e := newEnv(t, proxy.Options{})
		heap0, _ := heapAfterGC()
		r := dialRaw(t, e.addr)
		r.send(announce + "trickle")
		eq(t, r.read(), "-ERR Protocol error: invalid bulk length\r\n")
		r.expectClosed()
		heap1, _ := heapAfterGC()
		t.Logf("2 GiB bulk announced: refused at once, heap +%s", mib(delta(heap1, heap0)))
		if delta(heap1, heap0) > 4<<20 {
			t.Fatalf("heap grew %s for a refused announcement", mib(delta(heap1, heap0)))
		}
	})
	t.Run("query_buffer_limit", func(t *testing.T) {
		const qlimit = 8 << 20
		opts := proxy.Options{}
		opts.ProtoMaxBulkLen = 4 << 30
		opts.ClientQueryBufferLimit = qlimit
		e := newEnv(t, opts)
		heap0, _ := heapAfterGC()
		peak := heapPeak(false)
		r := dialRaw(t, e.addr)
		r.send(announce)
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 'x'
		}
		var sent atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent.Load() < 64<<20 {
				_ = r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				n, err := r.nc.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		got, err := r.readErr(20 * time.Second)
		wg.Wait()
		hp := peak()
		if err == nil {
			eq(t, got, "-ERR Protocol error: query buffer limit exceeded\r\n")
			r.expectClosed()
		} else if !errors.Is(err, io.EOF) && !isReset(err) {
			t.Fatalf("not cut off: %v", err)
		}
		t.Logf("2 GiB bulk announced, trickled in 64 KiB steps, query buffer limit %s: cut off after %s sent; heap peak +%s",
			mib(qlimit), mib(uint64(sent.Load())), mib(delta(hp, heap0)))
		if sent.Load() >= 64<<20 {
			t.Fatalf("sent %s without being cut off", mib(uint64(sent.Load())))
		}
		if delta(hp, heap0) > 32<<20 {
			t.Fatalf("heap peaked %s above the start, bound 32 MiB", mib(delta(hp, heap0)))
		}
	})
}

// A client pipelines GETs of a 1 MiB value — 128 MiB of replies — and never
// reads. The proxy disconnects it once client_output_buffer_limit is pending, and the
// other client sharing the same upstream connection keeps being served.
func TestBoundOutputBufferLimit(t *testing.T) {
	const limit = 16 << 20
	const gets = 128
	e := newEnv(t, proxy.Options{Config: config.Config{ClientOutputBufferLimit: config.Size(limit), Upstream: config.UpstreamConfig{PoolSize: 1}}})
	value := make([]byte, 1<<20)
	rand.Read(value)
	d := e.direct()
	eq(t, d.Set(ctx, "big", value, 0).Val(), "OK")
	eq(t, d.Set(ctx, "small", "s", 0).Val(), "OK")

	other := dialRaw(t, e.addr)
	eq(t, other.do("GET", "small"), bulk("s"))
	heap0, _ := heapAfterGC()
	live0 := liveAfterGC()
	peak, live := heapPeak(false), heapPeak(true)

	slow, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_ = slow.(*net.TCPConn).SetReadBuffer(64 << 10) // little kernel buffering on the slow side
	// One round trip first: the proxy counts a client once it has accepted
	// it, which a loaded machine may do after the other client's GETs
	// below. The loop then ran with one client counted, ended at once, and
	// the slow client, reading from then on, was rightly never cut off: it
	// received all 128 replies and the connection stayed open.
	slowRaw := &raw{t: t, nc: slow}
	eq(t, slowRaw.do("PING"), "+PONG\r\n")
	clients := e.p.Clients()
	var batch []byte
	for i := 0; i < gets; i++ {
		batch = resp.AppendCommandStrings(batch, "GET", "big")
	}
	if _, err := slow.Write(batch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	// The other client on the same upstream connection, meanwhile.
	var ops int
	var slowest time.Duration
	for e.p.Clients() >= clients || ops < 20 {
		if time.Since(start) > 2*time.Minute {
			// Not a timing bound: the cut comes once 16 MiB are held,
			// seconds even on a loaded machine; this only stops a hang.
			t.Fatalf("slow client still connected after 2 min (%d clients)", e.p.Clients())
		}
		s := time.Now()
		got, err := other.readErrDo(time.Minute, "GET", "small")
		if err != nil || got != bulk("s") {
			t.Fatalf("the other client's GET after %d ops: %q %v", ops, got, err)
		}
		slowest = max(slowest, time.Since(s))
		ops++
	}
	cut := time.Since(start)
	hp, lp := peak(), live()

	// What the slow client can still read is what the kernel buffered
	// before the cut; then the connection ends.
	_ = slow.SetReadDeadline(time.Now().Add(time.Minute))
	received, err := io.Copy(io.Discard, slow)
	if err != nil && !isReset(err) {
		t.Fatalf("slow client: %v after %d bytes", err, received)
	}
	t.Logf("client never reading %d x 1 MiB replies: disconnected after %v at output_buffer_limit %s; it received %s of %d MiB; heap peak +%s (HeapInuse, garbage included), live heap peak +%s",
		gets, cut.Round(time.Millisecond), mib(limit), mib(uint64(received)), gets, mib(delta(hp, heap0)), mib(delta(lp, live0)))
	t.Logf("the other client on the same upstream connection: %d GETs meanwhile, slowest %v", ops, slowest.Round(time.Millisecond))
	if received >= gets<<20/2 {
		t.Fatalf("slow client received %s: it was not cut off", mib(uint64(received)))
	}
	if delta(lp, live0) > limit*3/2 || delta(hp, heap0) > limit*3/2 {
		t.Fatalf("heap peaked %s above the start (live: %s), bound 1.5 x %s",
			mib(delta(hp, heap0)), mib(delta(lp, live0)), mib(limit))
	}
	eq(t, other.do("GET", "small"), bulk("s"))
}

// fakeUpstream is a RESP server that answers +PONG to everything, or, while
// held, only as permits are given: it counts the commands it has received
// and answered, which is the proxy's in-flight count on its connection.
type fakeUpstream struct {
	l                  net.Listener
	hold               atomic.Bool
	permits            chan struct{}
	received, answered atomic.Int64
	mu                 sync.Mutex
	conns              []net.Conn
	wg                 sync.WaitGroup
	releaseOnce        sync.Once
}

func startFakeUpstream(t *testing.T) *fakeUpstream {
	f := &fakeUpstream{l: listen(t), permits: make(chan struct{}, 1<<20)}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			nc, err := f.l.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, nc)
			f.mu.Unlock()
			q := make(chan struct{}, 1<<20)
			f.wg.Add(2)
			go func() {
				defer f.wg.Done()
				defer close(q)
				rd := resp.NewReader(nc, resp.Limits{})
				for {
					if _, err := rd.ReadCommand(); err != nil {
						return
					}
					f.received.Add(1)
					q <- struct{}{}
				}
			}()
			go func() {
				defer f.wg.Done()
				w := bufio.NewWriter(nc)
				for range q {
					if f.hold.Load() {
						<-f.permits
					}
					w.WriteString("+PONG\r\n")
					f.answered.Add(1)
					if len(q) == 0 {
						if w.Flush() != nil {
							return
						}
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		f.l.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.release()
		f.wg.Wait()
	})
	return f
}

// release answers everything from now on.
func (f *fakeUpstream) release() { f.releaseOnce.Do(func() { close(f.permits) }) }

// stable waits until the received count stops moving and returns it.
func (f *fakeUpstream) stable() int64 {
	last, since := f.received.Load(), time.Now()
	for time.Since(since) < 200*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
		if n := f.received.Load(); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}

// MaxPipeline: a client pipelines 5,000 commands to an upstream that is not
// answering; the proxy sends at most MaxPipeline of them and stops reading
// from the client until replies come back.
func TestBoundMaxPipeline(t *testing.T) {
	const maxPipeline, total = 64, 5000
	f := startFakeUpstream(t)
	e := &env{t: t, srv: nil}
	p, err := proxy.New(proxy.Options{Config: config.Config{MaxPipeline: maxPipeline, Upstream: config.UpstreamConfig{Addr: f.l.Addr().String(), PoolSize: 1}}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	l := listen(t)
	e.p, e.addr, e.done = p, l.Addr().String(), make(chan error, 1)
	go func() { e.done <- p.Serve(l) }()
	t.Cleanup(e.stopProxy)
	// Open the shared upstream connection (and let whatever the proxy sends
	// on a new connection, such as script preloads, be answered) first.
	r := dialRaw(t, e.addr)
	eq(t, r.do("PING"), "+PONG\r\n")
	f.stable()
	f.hold.Store(true)
	f.received.Store(0)
	f.answered.Store(0)

	var batch []byte
	for i := 0; i < total; i++ {
		batch = resp.AppendCommandStrings(batch, "PING")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.nc.Write(batch)
	}()
	var maxInflight int64
	var seen []string
	for round := 0; f.answered.Load() < total-maxPipeline && round < 400; round++ {
		recv := f.stable()
		inflight := recv - f.answered.Load()
		maxInflight = max(maxInflight, inflight)
		if len(seen) < 6 {
			seen = append(seen, fmt.Sprintf("%d/%d", recv, f.answered.Load()))
		}
		if inflight > maxPipeline {
			t.Fatalf("%d commands in flight upstream (received %d, answered %d), max_pipeline %d", inflight, recv, f.answered.Load(), maxPipeline)
		}
		if inflight == 0 {
			t.Fatalf("nothing in flight after %d answered: the proxy stalled", f.answered.Load())
		}
		if round == 0 && inflight < maxPipeline/2 {
			t.Fatalf("only %d in flight at first", inflight)
		}
		for i := 0; i < 40; i++ {
			f.permits <- struct{}{}
		}
		if round >= 3 {
			break // the bound held over several refills; let the rest go
		}
	}
	f.release()
	want := strings.Repeat("+PONG\r\n", total)
	_ = r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.nc, got); err != nil {
		t.Fatalf("reading %d replies: %v", total, err)
	}
	wg.Wait()
	eq(t, string(got), want)
	t.Logf("max_pipeline %d: client pipelined %d commands to a held upstream; most in flight upstream at once: %d (received/answered at each pause: %v); all %d replies then arrived in order",
		maxPipeline, total, maxInflight, seen, total)
}
