package proxy

import (
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/rewrite"
)

// grant is one acquisition the proxy saw succeed: who (owner) got which lock
// with which value and grant number.
type grant struct {
	owner    string
	value    []byte
	number   int64
	acquired time.Time
	lease    time.Duration
	expires  time.Time // zero when the lock has no expiry
	client   string    // address of the connection that acquired it
	name     string    // its client name then
	rule     *policy.Rule
}

func (g *grant) live(now time.Time) bool { return g.expires.IsZero() || now.Before(g.expires) }

// grants holds the proxy's records, by lock key and then by owner. A lock key
// can have several records: after A's lease lapsed and B acquired, A's record
// stays so that A's late release is token-checked (and answers 0) instead of
// being refused as coming from a stranger. Lapsed records are dropped after
// keepLapsed; the total is capped at max, so memory stays bounded.
type grants struct {
	mu         sync.Mutex
	byKey      map[string]map[string]*grant
	byOwner    map[string]map[string]struct{} // owner → keys, to drop an owner's records
	n          int
	max        int
	keepLapsed time.Duration
	lastSweep  time.Time
	untracked  int64 // grants not recorded because the table was full
	lapsed     int64 // grants whose lease ran out before their release
}

func newGrants(max int, keepLapsed time.Duration) *grants {
	return &grants{
		byKey:      map[string]map[string]*grant{},
		byOwner:    map[string]map[string]struct{}{},
		max:        max,
		keepLapsed: keepLapsed,
	}
}

// get returns owner's grant of key.
func (gs *grants) get(key []byte, owner string) (*grant, bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g, ok := gs.byKey[string(key)][owner]
	return g, ok
}

// holder returns an owner other than notOwner whose lease on key is running.
func (gs *grants) holder(key []byte, notOwner string, now time.Time) string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var best *grant
	for o, g := range gs.byKey[string(key)] {
		if o != notOwner && g.live(now) && (best == nil || g.number > best.number) {
			best = g
		}
	}
	if best == nil {
		return ""
	}
	return best.owner
}

// put records a new grant, replacing the owner's earlier one of the key.
// It reports false when the table is full of live grants.
func (gs *grants) put(key string, g *grant, now time.Time) bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	m := gs.byKey[key]
	if _, ok := m[g.owner]; !ok {
		if gs.n >= gs.max || now.Sub(gs.lastSweep) > time.Second {
			gs.sweepLocked(now)
		}
		if gs.n >= gs.max {
			gs.untracked++
			return false
		}
		gs.n++
	}
	if m == nil {
		m = map[string]*grant{}
		gs.byKey[key] = m
	}
	m[g.owner] = g
	ks := gs.byOwner[g.owner]
	if ks == nil {
		ks = map[string]struct{}{}
		gs.byOwner[g.owner] = ks
	}
	ks[key] = struct{}{}
	return true
}

func (gs *grants) setValue(key []byte, owner string, value []byte, expires time.Time) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if g, ok := gs.byKey[string(key)][owner]; ok {
		g.value = value
		if !expires.IsZero() {
			g.expires = expires
		}
	}
}

// drop removes owner's record of key (after a release), reporting whether
// its lease had already run out.
func (gs *grants) drop(key []byte, owner string, now time.Time) (lapsed bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g, ok := gs.byKey[string(key)][owner]
	if !ok {
		return false
	}
	lapsed = !g.live(now)
	if lapsed {
		gs.lapsed++
	}
	gs.removeLocked(string(key), owner)
	return lapsed
}

// dropOwner removes every record of an owner whose last connection ended.
func (gs *grants) dropOwner(owner string) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for key := range gs.byOwner[owner] {
		gs.removeLocked(key, owner)
	}
}

func (gs *grants) removeLocked(key, owner string) {
	m := gs.byKey[key]
	if _, ok := m[owner]; !ok {
		return
	}
	delete(m, owner)
	if len(m) == 0 {
		delete(gs.byKey, key)
	}
	if ks := gs.byOwner[owner]; ks != nil {
		delete(ks, key)
		if len(ks) == 0 {
			delete(gs.byOwner, owner)
		}
	}
	gs.n--
}

// sweepLocked drops records whose lease ended more than keepLapsed ago.
func (gs *grants) sweepLocked(now time.Time) {
	gs.lastSweep = now
	for key, m := range gs.byKey {
		for owner, g := range m {
			if !g.expires.IsZero() && now.Sub(g.expires) > gs.keepLapsed {
				gs.lapsed++
				gs.removeLocked(key, owner)
			}
		}
	}
}

// len is the number of records held.
func (gs *grants) len() int {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.n
}

// held returns every grant owner holds (lapsed ones too: a paused holder's
// write must meet the fence, not slip past it as unfenced).
func (gs *grants) held(owner string) []rewrite.Held {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	ks := gs.byOwner[owner]
	if len(ks) == 0 {
		return nil
	}
	out := make([]rewrite.Held, 0, len(ks))
	for k := range ks {
		if g := gs.byKey[k][owner]; g != nil {
			out = append(out, rewrite.Held{Key: []byte(k), Number: g.number})
		}
	}
	return out
}
