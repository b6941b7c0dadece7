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
//
// A key's records are a slice, not a map by owner: nearly every lock key has
// one record at a time, and a map per key, made at each grant and dropped at
// each release, was most of what an acquire-release cycle allocated. An
// owner's key set is kept while the owner lives, empty or not, for the same
// reason; dropOwner removes it when the owner's last connection ends.
type grants struct {
	mu         sync.Mutex
	byKey      map[string]keyGrants
	byOwner    map[string]map[string]struct{} // owner → keys, to drop an owner's records
	n          int
	max        int
	keepLapsed time.Duration
	lastSweep  time.Time
	untracked  int64 // grants not recorded because the table was full
	lapsed     int64 // grants whose lease ran out before their release
}

// keyGrants is one key's records, at most one per owner.
type keyGrants []*grant

// of returns owner's record, and its index (-1 if none).
func (kg keyGrants) of(owner string) (*grant, int) {
	for i, g := range kg {
		if g.owner == owner {
			return g, i
		}
	}
	return nil, -1
}

func newGrants(max int, keepLapsed time.Duration) *grants {
	return &grants{
		byKey:      map[string]keyGrants{},
		byOwner:    map[string]map[string]struct{}{},
		max:        max,
		keepLapsed: keepLapsed,
	}
}

// get returns owner's grant of key.
func (gs *grants) get(key []byte, owner string) (*grant, bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g, _ := gs.byKey[string(key)].of(owner)
	return g, g != nil
}

// holder returns an owner other than notOwner whose lease on key is running.
func (gs *grants) holder(key []byte, notOwner string, now time.Time) string {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	var best *grant
	for _, g := range gs.byKey[string(key)] {
		if g.owner != notOwner && g.live(now) && (best == nil || g.number > best.number) {
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
	if _, i := gs.byKey[key].of(g.owner); i >= 0 {
		gs.byKey[key][i] = g
		return true
	}
	if gs.n >= gs.max || now.Sub(gs.lastSweep) > time.Second {
		gs.sweepLocked(now)
	}
	if gs.n >= gs.max {
		gs.untracked++
		return false
	}
	gs.n++
	gs.byKey[key] = append(gs.byKey[key], g)
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
	if g, _ := gs.byKey[string(key)].of(owner); g != nil {
		g.value = value
		if !expires.IsZero() {
			g.expires = expires
		}
	}
}

// drop removes owner's record of key (after a release) and returns it,
// with whether its lease had already run out; nil if there was none.
func (gs *grants) drop(key []byte, owner string, now time.Time) (g *grant, lapsed bool) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g, _ = gs.byKey[string(key)].of(owner)
	if g == nil {
		return nil, false
	}
	lapsed = !g.live(now)
	if lapsed {
		gs.lapsed++
	}
	removeLocked(gs, key, owner)
	return g, lapsed
}

// dropOwner removes every record of an owner whose last connection ended.
func (gs *grants) dropOwner(owner string) {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	for key := range gs.byOwner[owner] {
		removeLocked(gs, key, owner)
	}
	delete(gs.byOwner, owner)
}

// removeLocked takes the key as a string (from the table's own maps) or as
// the bytes of a command's argument: indexing a map with string(b) does not
// allocate, converting b to pass it would.
func removeLocked[K string | []byte](gs *grants, key K, owner string) {
	kg := gs.byKey[string(key)]
	_, i := kg.of(owner)
	if i < 0 {
		return
	}
	if len(kg) == 1 {
		delete(gs.byKey, string(key))
	} else {
		kg[i] = kg[len(kg)-1]
		kg[len(kg)-1] = nil
		gs.byKey[string(key)] = kg[:len(kg)-1]
	}
	if ks := gs.byOwner[owner]; ks != nil {
		delete(ks, string(key)) // the set itself stays until dropOwner
	}
	gs.n--
}

// sweepLocked drops records whose lease ended more than keepLapsed ago.
func (gs *grants) sweepLocked(now time.Time) {
	gs.lastSweep = now
	for key, kg := range gs.byKey {
		var old []string
		for _, g := range kg {
			if !g.expires.IsZero() && now.Sub(g.expires) > gs.keepLapsed {
				old = append(old, g.owner)
			}
		}
		for _, owner := range old { // not while ranging over kg: removal reorders it
			gs.lapsed++
			removeLocked(gs, key, owner)
		}
	}
	// Empty key sets of owners still connected are kept between grants;
	// one whose record arrived after its owner left would stay forever.
	for owner, ks := range gs.byOwner {
		if len(ks) == 0 {
			delete(gs.byOwner, owner)
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
		if g, _ := gs.byKey[k].of(owner); g != nil {
			out = append(out, rewrite.Held{Key: []byte(k), Number: g.number})
		}
	}
	return out
}
