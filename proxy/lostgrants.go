package proxy

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

type sessionGrants struct {
	mu sync.Mutex
	m  map[string]int64 // lock key -> the grant this session was given
}

func (g *sessionGrants) given(key string, grant int64) {
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

func (g *sessionGrants) forget(key string) {
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
}

// lostIfOlder reports, and forgets, a grant of key given under an epoch
// older than epoch: the caller found Valkey has no record of it.
func (g *sessionGrants) lostIfOlder(key string, epoch int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	grant, ok := g.m[key]
	if !ok {
		return false
	}
	delete(g.m, key)
	return grant>>rewrite.EpochShift < epoch
}

// currentEpoch is the epoch this instance mints under: the highest seen in
// a token on the current run, and at least the one the next establishment
// there will reach.
func (p *Proxy) currentEpoch() int64 {
	p.epochs.mu.Lock()
	defer p.epochs.mu.Unlock()
	e := p.epochs.cur
	if p.epochs.run != "" {
		e = max(e, p.epochs.prev+1, p.sentinelFloorLocked())
	}
	return e
}

// noteGrants follows a command's effects: grants given, released, or found
// missing (NOTOWNER), and flushes (the epoch's clues follow both).
func (s *session) noteGrants(effects []rewrite.Effect) {
	for i := range effects {
		e := &effects[i]
		switch {
		case e.Kind == rewrite.Grant && e.Grant > 0:
			s.grants.given(string(e.Key), e.Grant)
			s.p.sawToken(e.Grant)
		case e.Kind == rewrite.Flushed:
			s.p.sawFlush()
		case e.Kind == rewrite.Released && e.Outcome == rewrite.OutcomeReleased:
			s.grants.forget(string(e.Key))
		case e.Kind == rewrite.Refused && strings.HasPrefix(e.Reason, "NOTOWNER"):
			s.foundMissing(string(e.Key))
		}
	}
}

// foundMissing: Valkey has no record of this session's grant of key.
func (s *session) foundMissing(key string) {
	if s.grants.lostIfOlder(key, s.p.currentEpoch()) {
		s.p.lostGrants.Add(1)
		s.p.log.Warn("a grant was lost in a change of primary: its holder's release, renewal or fence finds no record of it", "key", key, "client", s.addr)
	}
}
