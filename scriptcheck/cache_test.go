package scriptcheck

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestCacheLearnLookup(t *testing.T) {
	c := NewCache(0)
	body := readLua(t, "canonical_release.lua")
	e := c.Learn([]byte(body))
	if e.SHA != SHA1(body) {
		t.Fatal("sha")
	}
	if c.Learn([]byte(body)) != e || c.Lookup([]byte(e.SHA)) != e || c.Lookup([]byte(strings.ToUpper(e.SHA))) != e {
		t.Fatal("not the same entry")
	}
	if c.Lookup([]byte(SHA1("other"))) != nil {
		t.Fatal("unseen script found")
	}
	r := e.Report()
	if v, _ := r.Key(1); v != Guarded || e.Report() != r {
		t.Fatal("report")
	}
	// Empty script: a valid EVAL body.
	if ee := c.Learn(nil); ee.SHA != SHA1("") || c.Learn([]byte{}) != ee {
		t.Fatal("empty body")
	}
}

// A client sending endless distinct scripts cannot grow the cache without
// bound; scripts in use stay.
func TestCacheBounded(t *testing.T) {
	c := NewCache(64)
	hot := c.Learn([]byte("return 'hot'"))
	for i := range 5000 {
		c.Learn(fmt.Appendf(nil, "return %d", i))
		c.Lookup([]byte(hot.SHA)) // in use
		if n := c.Len(); n > 64 {
			t.Fatalf("%d entries after %d scripts", n, i+1)
		}
	}
	if c.Lookup([]byte(hot.SHA)) != hot {
		t.Fatal("the script in use was evicted")
	}
	if c.Lookup([]byte(SHA1("return 1"))) != nil {
		t.Fatal("an old unused script is still there")
	}
	// Bytes bound.
	c = NewCache(1000)
	c.SetMaxBytes(10_000)
	for i := range 200 {
		c.Learn([]byte(fmt.Sprintf("return '%0200d'", i)))
	}
	c.mu.RLock()
	bytes, n := c.bytes, len(c.byBody)
	c.mu.RUnlock()
	if bytes > 10_000 || n > 10_000/200 {
		t.Fatalf("%d bytes in %d bodies", bytes, n)
	}
	// A body over the bytes bound is remembered by SHA1 only, Unknown.
	big := c.Learn([]byte("return '" + strings.Repeat("x", 20_000) + "'"))
	if big.Report().Err == "" || c.Lookup([]byte(big.SHA)) != big {
		t.Fatal("big body")
	}
}

func TestCacheFunctions(t *testing.T) {
	c := NewCache(0)
	lib := readLua(t, "locklib.lua")
	c.LoadLibrary([]byte(lib))
	if r := c.Function([]byte("LOCK_RELEASE")); r == nil || r.Function != "lock_release" {
		t.Fatalf("%+v", r)
	}
	if c.Function([]byte("nosuch")) != nil {
		t.Fatal("unknown function found")
	}
	c.Settle(c.ProposeDelete([]byte("locklib")), true)
	if c.Function([]byte("lock_release")) != nil {
		t.Fatal("deleted library's function found")
	}
	c.LoadLibrary([]byte(lib))
	c.Settle(c.ProposeFlush(), true)
	if c.Function([]byte("lock_release")) != nil {
		t.Fatal("flushed")
	}
	// Bounded too.
	c.maxFuncs = 10
	for i := range 50 {
		c.LoadLibrary(fmt.Appendf(nil, "#!lua name=l%d\nredis.register_function('f%d', function() return 1 end)", i, i))
	}
	if len(c.funcs) > 10 || c.Function([]byte("f49")) == nil {
		t.Fatalf("%d functions", len(c.funcs))
	}
	// Not a library: nothing learned.
	c.LoadLibrary([]byte("return 1"))
}

// Issue 18: the cache learns what Valkey accepted, no sooner; meanwhile a
// pending load makes FCALL judge by the worse of old and new.
func TestCacheFunctionsSettle(t *testing.T) {
	c := NewCache(0)
	blind := "#!lua name=a\nredis.register_function('f', function(k) return redis.call('DEL', k[1]) end)"
	guarded := "#!lua name=b\nredis.register_function('f', function(k, a) if redis.call('GET', k[1]) == a[1] then return redis.call('DEL', k[1]) end return 0 end)"
	c.LoadLibrary([]byte(blind))
	ch := c.ProposeLoad([]byte(guarded))
	if v, _ := c.Function([]byte("f")).Key(1); v != Blind {
		t.Fatalf("pending: %v", v)
	}
	c.Settle(ch, false) // Valkey: "Function f already exists"
	if v, _ := c.Function([]byte("f")).Key(1); v != Blind {
		t.Fatalf("refused load learned: %v", v)
	}
	// A pending blind load over a guarded function: blind until settled.
	c = NewCache(0)
	c.LoadLibrary([]byte(guarded))
	ch = c.ProposeLoad([]byte(strings.Replace(blind, "name=a", "name=b", 1)))
	if v, _ := c.Function([]byte("F")).Key(1); v != Blind {
		t.Fatalf("pending blind replacement: %v", v)
	}
	c.Settle(ch, true)
	if v, _ := c.Function([]byte("f")).Key(1); v != Blind {
		t.Fatalf("accepted: %v", v)
	}
	// A flush refused (or discarded) forgets nothing.
	c.Settle(c.ProposeFlush(), false)
	if c.Function([]byte("f")) == nil {
		t.Fatal("refused flush forgot")
	}
	// Names differing only in case, in one library: the worse verdict.
	for range 20 {
		c = NewCache(0)
		c.LoadLibrary([]byte("#!lua name=c\nredis.register_function('g', function(k) return redis.call('DEL', k[1]) end)\nredis.register_function('G', function(k) return 1 end)"))
		if v, _ := c.Function([]byte("G")).Key(1); v != Blind {
			t.Fatalf("case collision: %v", v)
		}
	}
	// Pending never settled: bounded.
	for range 2 * maxPending {
		c.ProposeLoad([]byte(guarded))
	}
	if len(c.pending) != maxPending {
		t.Fatalf("%d pending", len(c.pending))
	}
}

// A FUNCTION DUMP payload, as valkey-server 8 made it for two libraries
// (the second one's code long enough to be LZF-compressed).
func TestDumpLibraries(t *testing.T) {
	bodies, ok := DumpLibraries([]byte("\xf5\x40\x4c#!lua name=l1\nredis.register_function('f', function(k,a) return 'blind' end)\x0b\x00\x19\x5d\x68\x58\xcc\x53\x4e\x03"))
	if !ok || len(bodies) != 1 || !strings.HasPrefix(bodies[0], "#!lua name=l1\n") || !strings.HasSuffix(bodies[0], "end)") {
		t.Fatalf("%v %q", ok, bodies)
	}
	if _, ok := DumpLibraries([]byte("garbage, not a dump at all")); ok {
		t.Fatal("garbage read")
	}
	if _, ok := DumpLibraries(nil); ok {
		t.Fatal("empty read")
	}
}

func TestCacheConcurrent(t *testing.T) {
	c := NewCache(32)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				body := fmt.Appendf(nil, "return redis.call('DEL', KEYS[%d])", (g*7+i)%50+1)
				e := c.Learn(body)
				if v, _ := e.Report().Key((g*7+i)%50 + 1); v != Blind {
					t.Errorf("%s: %v", body, v)
					return
				}
				if f := c.Lookup([]byte(e.SHA)); f != nil && f.SHA != e.SHA {
					t.Error("wrong entry")
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkCacheLookup: what an EVALSHA of a known script costs the cache.
func BenchmarkCacheLookup(b *testing.B) {
	c := NewCache(0)
	for i := range 1000 {
		c.Learn(fmt.Appendf(nil, "return %d", i))
	}
	e := c.Learn([]byte(readLua(b, "canonical_release.lua")))
	e.Report()
	sha := []byte(e.SHA)
	b.ReportAllocs()
	for b.Loop() {
		if v, _ := c.Lookup(sha).Report().Key(1); v != Guarded {
			b.Fatal(v)
		}
	}
}
