package locks

import (
	"strings"
	"sync"

	"github.com/lockproxy/lockproxy/rewrite"
)

// Grants found lost (issue 29): a grant a session was given, under an
// epoch older than the one this instance mints under now, that Valkey no
// longer has a record of when its holder comes back to it (its release or
// renewal refused NOTOWNER, LOCKPROXY FENCE nil). A change of primary lost
// it: the holder's release answers NOTOWNER, its fenced writes are refused
// (UNFENCED) and FENCE answers nil, as for any holder without a record;
// lockproxy_grants_lost_total counts them.

// maxRemembered bounds the grants a session remembers (a session holds a
// few locks at once; past that the oldest are not checked).
const maxRemembered = 64

// Grants are the grants one session was given, by lock key, to tell a
// lost one; the zero value is ready.
type Grants struct {
	mu sync.Mutex
	m  map[string]int64 // lock key -> the grant this session was given
}

func (g *Grants) given(key string, grant int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[string]int64)
	}
	if _, ok := g.m[key]; !ok && len(g.m) >= maxRemembered {
		return
	}
	g.m[key] = grant
}

func (g *Grants) forget(key string) {
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
}

// lostIfOlder reports, and forgets, a grant of key given under an epoch
// older than epoch: the caller found Valkey has no record of it.
func (g *Grants) lostIfOlder(key string, epoch int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	grant, ok := g.m[key]
	if !ok {
		return false
	}
	delete(g.m, key)
	return grant>>rewrite.EpochShift < epoch
}

// CurrentEpoch is the epoch this instance mints under: the highest seen in
// a token on the current run, and at least the one the next establishment
// there will reach.
func (k *Keeper) CurrentEpoch() int64 {
	k.epochs.mu.Lock()
	defer k.epochs.mu.Unlock()
	e := k.epochs.cur
	if k.epochs.run != "" {
		e = max(e, k.epochs.prev+1, k.sentinelFloorLocked())
	}
	return e
}

// noteGrants follows a command's effects: grants given, released, or found
// missing (NOTOWNER), and flushes (the epoch's clues follow both).
func (k *Keeper) noteGrants(c Client, effects []rewrite.Effect) {
	for i := range effects {
		e := &effects[i]
		switch {
		case e.Kind == rewrite.Grant && e.Grant > 0:
			c.Grants().given(string(e.Key), e.Grant)
			k.sawToken(e.Grant)
		case e.Kind == rewrite.Flushed:
			k.sawFlush()
		case e.Kind == rewrite.Released && e.Outcome == rewrite.OutcomeReleased:
			c.Grants().forget(string(e.Key))
		case e.Kind == rewrite.Refused && strings.HasPrefix(e.Reason, "NOTOWNER"):
			k.FoundMissing(c, string(e.Key))
		}
	}
}

// FoundMissing follows Valkey having no record of c's grant of key (its
// release or renewal refused NOTOWNER, LOCKPROXY FENCE nil).
func (k *Keeper) FoundMissing(c Client, key string) {
	if c.Grants().lostIfOlder(key, k.CurrentEpoch()) {
		k.Lost.Add(1)
		k.log.Warn("a grant was lost in a change of primary: its holder's release, renewal or fence finds no record of it", "key", key, "client", c.Addr())
	}
}
