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

// A FUNCTION DUMP payload, as valkey-server 8 made it for two libraries
// (the second one's code long enough to be LZF-compressed).
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
