package scriptcheck

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Default bounds of a Cache.
const (
	DefaultMaxScripts = 4096
	DefaultMaxBytes   = 32 << 20 // script bodies kept for EVAL lookups
)

// Cache remembers the scripts seen passing through the proxy, by SHA1 (and by body, so that a repeated EVAL is a map lookup
// too), with their analysis, made once per distinct script and only when
// first needed. It is bounded: past MaxScripts scripts or MaxBytes of
// bodies, the least recently used are forgotten (CLOCK approximation, so a
// hit costs a read lock and an atomic flag, never a write lock). A
// forgotten script is an unseen script again.
//
// It is safe for concurrent use.
type Cache struct {
	maxScripts, maxBytes int

	mu     sync.RWMutex
	bySHA  map[string]*Entry
	byBody map[string]*Entry
	ring   []*Entry // CLOCK ring; nil slots are free
	free   []int
	hand   int
	bytes  int
}

// Entry is one script in the cache.
type Entry struct {
	SHA  string
	body string
	once sync.Once
	rep  *Report
	used atomic.Bool
	slot int
}

// Report returns the script's analysis, made on first use.
func (e *Entry) Report() *Report {
	e.once.Do(func() {
		r := &Report{SHA: e.SHA}
		analyzeInto(r, e.body)
		e.rep = r
	})
	return e.rep
}

// Body is the script's text; "" for one too large to keep.
func (e *Entry) Body() string { return e.body }

func (e *Entry) touch() {
	if !e.used.Load() {
		e.used.Store(true)
	}
}

// NewCache makes a cache holding up to maxScripts scripts (0: the
// defaults for every bound).
func NewCache(maxScripts int) *Cache {
	if maxScripts <= 0 {
		maxScripts = DefaultMaxScripts
	}
	return &Cache{
		maxScripts: maxScripts, maxBytes: DefaultMaxBytes,
		bySHA: map[string]*Entry{}, byBody: map[string]*Entry{},
	}
}

// SetMaxBytes bounds the bytes of script bodies kept (for tests).
func (c *Cache) SetMaxBytes(n int) {
	c.mu.Lock()
	c.maxBytes = n
	c.mu.Unlock()
}

// Learn records a script body (EVAL, SCRIPT LOAD) and returns its entry.
// A body seen before costs a map lookup; a new one its SHA1.
func (c *Cache) Learn(body []byte) *Entry {
	c.mu.RLock()
	e := c.byBody[string(body)]
	c.mu.RUnlock()
	if e != nil {
		e.touch()
		return e
	}
	sha := sha1Bytes(body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.bySHA[sha]; e != nil {
		e.touch()
		return e
	}
	e = &Entry{SHA: sha}
	if len(body) <= MaxBody && len(body) <= c.maxBytes {
		e.body = string(body)
		c.byBody[e.body] = e
		c.bytes += len(body)
	} else {
		// Too large to keep or to analyse: remembered by SHA1 only.
		e.once.Do(func() {
			e.rep = &Report{SHA: sha, Err: "the script is too large to analyse"}
		})
	}
	c.bySHA[sha] = e
	c.insert(e)
	return e
}

// Lookup finds a script by its SHA1 (EVALSHA; either letter case). It
// returns nil for a script the cache has not seen (or has forgotten).
func (c *Cache) Lookup(sha []byte) *Entry {
	c.mu.RLock()
	e := c.bySHA[string(sha)]
	c.mu.RUnlock()
	if e == nil && hasUpper(sha) {
		c.mu.RLock()
		e = c.bySHA[strings.ToLower(string(sha))]
		c.mu.RUnlock()
	}
	if e != nil {
		e.touch()
	}
	return e
}

// Flush forgets every script, as SCRIPT FLUSH makes Valkey forget them:
// an EVALSHA of one is then answered NOSCRIPT, as Valkey answers it.
func (c *Cache) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bySHA, c.byBody = map[string]*Entry{}, map[string]*Entry{}
	c.ring, c.free, c.hand, c.bytes = nil, nil, 0, 0
}

// Len is the number of scripts held.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.bySHA)
}

func hasUpper(b []byte) bool {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

// insert adds e to the ring, evicting while over a bound. Called with mu
// held.
func (c *Cache) insert(e *Entry) {
	for len(c.bySHA) > c.maxScripts || c.bytes > c.maxBytes {
		if !c.evict(e) {
			break
		}
	}
	if n := len(c.free); n > 0 {
		e.slot = c.free[n-1]
		c.free = c.free[:n-1]
		c.ring[e.slot] = e
		return
	}
	e.slot = len(c.ring)
	c.ring = append(c.ring, e)
}

// evict forgets one entry other than keep: the first whose used flag is
// clear, clearing flags on the way (CLOCK).
func (c *Cache) evict(keep *Entry) bool {
	if len(c.ring) == 0 {
		return false
	}
	for range 2*len(c.ring) + 1 {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		v := c.ring[c.hand]
		c.hand++
		if v == nil || v == keep {
			continue
		}
		if v.used.Load() {
			v.used.Store(false)
			continue
		}
		delete(c.bySHA, v.SHA)
		if c.byBody[v.body] == v {
			delete(c.byBody, v.body)
			c.bytes -= len(v.body)
		}
		c.ring[v.slot] = nil
		c.free = append(c.free, v.slot)
		return true
	}
	return false
}
