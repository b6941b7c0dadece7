package cluster

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// View is the proxy's view of the cluster: the slot map now, what keeps it
// current (a refresh on a timer and on request, each believing only a map
// two nodes give alike: Agree), and what it counts.
type View struct {
	host  Host
	seeds []string
	every time.Duration // the timer's period

	m       atomic.Pointer[Map]
	refresh chan struct{} // asks the refresher to read the topology again soon
	stop    context.CancelFunc

	mu      sync.Mutex
	lastErr error // why the last refresh found no map

	Stats Stats
}

// Stats counts what the proxy did about the cluster for its clients.
type Stats struct {
	// Refreshes and Disagreements count topology reads that changed the
	// map and those a second node did not confirm.
	Refreshes, Disagreements atomic.Int64
	// What redirects and splits the proxy took on for its clients.
	Moved, Asked, TryAgain, Splits atomic.Int64
	// Sharded subscriptions the proxy followed to a slot's new primary.
	ShardFollows atomic.Int64
}

// minRefreshGap bounds how often redirects and dial failures may make the
// proxy read the topology: a burst of MOVED during a resharding costs one
// read, not one per command.
const minRefreshGap = 100 * time.Millisecond

// NewView is a view of the cluster whose seeds are the nodes first asked,
// read again every period; Start starts it.
func NewView(h Host, seeds []string, every time.Duration) *View {
	return &View{host: h, seeds: seeds, every: every, refresh: make(chan struct{}, 1)}
}

// Start reads the topology once (a cluster that cannot be reached is not
// an error: commands get one until it can) and starts the refresher.
func (v *View) Start() {
	v.Refresh()
	ctx, cancel := context.WithCancel(context.Background())
	v.stop = cancel
	v.host.WG.Add(1)
	go v.refresher(ctx)
}

// Stop ends the refresher.
func (v *View) Stop() { v.stop() }

// refresher reads the topology on request and on a timer.
func (v *View) refresher(ctx context.Context) {
	defer v.host.WG.Done()
	t := time.NewTicker(v.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-v.refresh:
		}
		v.Refresh()
		select { // requests that came during the read are answered by it
		case <-ctx.Done():
			return
		case <-time.After(minRefreshGap):
		}
	}
}

// RefreshSoon asks for a topology read without waiting for it.
func (v *View) RefreshSoon() {
	select {
	case v.refresh <- struct{}{}:
	default:
	}
}

// Map returns the map now; nil before the cluster was first reached.
func (v *View) Map() *Map { return v.m.Load() }

// Refresh asks the nodes for the slot map (Agree: the first map two nodes
// give alike) and installs it when it is not the one the view has: one
// node with a stale or partitioned view can neither move the proxy's
// traffic nor keep it where the others have left. It waits for the nodes.
func (v *View) Refresh() {
	cur := v.m.Load()
	var candidates []string
	if cur != nil {
		candidates = append(candidates, cur.Nodes...)
	}
	for _, s := range v.seeds {
		if !slices.Contains(candidates, s) {
			candidates = append(candidates, s)
		}
	}
	m, disagreed, errs := Agree(candidates, v.read)
	if disagreed {
		v.host.Log.Warn("cluster nodes disagree on the slot map; believing the first map a second node confirms", "confirmed", m != nil)
	}
	switch {
	case m == nil:
		if disagreed {
			v.Stats.Disagreements.Add(1)
		}
		v.setErr(errors.Join(errs...))
		if cur == nil {
			v.host.Log.Warn("cannot read the cluster's slot map yet", "seeds", v.seeds, "err", errors.Join(errs...))
		}
	case cur != nil && m.Equal(cur):
		v.setErr(nil)
	default:
		v.install(m)
	}
}

func (v *View) install(m *Map) {
	old := v.m.Swap(m)
	v.Stats.Refreshes.Add(1)
	v.setErr(nil)
	if old != nil {
		v.host.Log.Info("cluster slot map changed", "primaries", m.Primaries)
	}
}

func (v *View) setErr(err error) {
	v.mu.Lock()
	v.lastErr = err
	v.mu.Unlock()
}

// Err is why the last refresh found no map (nil when it found one).
func (v *View) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lastErr
}

// NoMap is the error reply for a command that needs the map before any was
// read.
func (v *View) NoMap() []byte { return resp.AppendError(nil, v.host.NoMapText(v.Err())) }

// read asks one node: CLUSTER SHARDS, or CLUSTER SLOTS where that is
// refused (servers before 7.0).
func (v *View) read(addr string) (*Map, error) {
	r, err := v.host.Do(addr, 2, "", resp.AppendCommandStrings(nil, "CLUSTER", "SHARDS"))
	if err != nil {
		return nil, err
	}
	sh, _, err := resp.Parse(r[0])
	if err != nil {
		return nil, err
	}
	if sh.Type != '-' {
		return FromShards(sh, v.host.TLS(), addr)
	}
	r, err = v.host.Do(addr, 2, "", resp.AppendCommandStrings(nil, "CLUSTER", "SLOTS"))
	if err != nil {
		return nil, err
	}
	if sh, _, err = resp.Parse(r[0]); err != nil {
		return nil, err
	}
	return FromSlots(sh, addr)
}

// Size is how many primaries the map names and how many slots they serve.
func (v *View) Size() (prims, covered int64) {
	if m := v.Map(); m != nil {
		return int64(len(m.Primaries)), int64(m.Covered())
	}
	return 0, 0
}

// AnyNode is where a connection with no slot to go by is opened (the side
// connection, a keyless command's first connection): a primary, or a seed
// before any map was read.
func (v *View) AnyNode() (string, error) {
	if m := v.Map(); m != nil && len(m.Primaries) > 0 {
		return m.Primaries[0], nil
	}
	if len(v.seeds) == 0 {
		return "", errors.New("no cluster seeds")
	}
	return v.seeds[0], nil
}

// IsPrimary reports whether addr serves slots in the map now (true before
// any map was read: nothing better is known).
func (v *View) IsPrimary(addr string) bool {
	m := v.Map()
	if m == nil {
		return true
	}
	return slices.Contains(m.Primaries, addr)
}

// KeylessNode spreads keyless commands over the primaries by id (a
// session's).
func (v *View) KeylessNode(id uint64) string {
	if m := v.Map(); m != nil && len(m.Primaries) > 0 {
		return m.Primaries[id%uint64(len(m.Primaries))]
	}
	addr, _ := v.AnyNode()
	return addr
}
