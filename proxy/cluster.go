package proxy

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// clusterState is the proxy's view of the cluster: the slot map now, and
// what keeps it current.
type clusterState struct {
	// What upstream.cluster and cluster_face say (config.ClusterConfig).
	seeds []string
	every time.Duration // the timer's period
	face  config.ClusterFace
	m     atomic.Pointer[cluster.Map]

	// refresh asks the refresher to read the topology again soon.
	refresh chan struct{}
	stop    context.CancelFunc
	// refreshes and disagreements count topology reads that changed the map
	// and those a second node did not confirm (tests, metrics).
	refreshes, disagreements atomic.Int64
	// What redirects and splits the proxy took on for its clients.
	moved, asked, tryAgain, splits atomic.Int64
	// Sharded subscriptions the proxy followed to a slot's new primary.
	shardFollows atomic.Int64

	mu      sync.Mutex
	lastErr error // why the last refresh found no map

	conns upstream.Plains

	// wrappersSent: the wrappers of clients' scripts sent to each node
	// (cluster_scripts.go).
	wrappersSent sync.Map
}

// minRefreshGap bounds how often redirects and dial failures may make the
// proxy read the topology: a burst of MOVED during a resharding costs one
// read, not one per command.
const minRefreshGap = 100 * time.Millisecond

// startCluster reads the topology once (a cluster that cannot be reached is
// not an error: commands get one until it can) and starts the refresher.
func (p *Proxy) startCluster() {
	c := p.opts.Upstream.Cluster
	cl := &clusterState{seeds: c.Seeds, every: c.Refresh.D(), face: p.opts.ClusterFace, refresh: make(chan struct{}, 1)}
	p.cl = cl
	p.refreshTopology()
	ctx, cancel := context.WithCancel(context.Background())
	cl.stop = cancel
	p.wg.Add(1)
	go p.refresher(ctx)
}

func (p *Proxy) stopCluster() {
	if p.cl == nil {
		return
	}
	p.cl.stop()
	p.cl.conns.CloseAll()
}

// refresher reads the topology on request and on a timer.
func (p *Proxy) refresher(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.cl.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.cl.refresh:
		}
		p.refreshTopology()
		select { // requests that came during the read are answered by it
		case <-ctx.Done():
			return
		case <-time.After(minRefreshGap):
		}
	}
}

// refreshSoon asks for a topology read without waiting for it.
func (cl *clusterState) refreshSoon() {
	select {
	case cl.refresh <- struct{}{}:
	default:
	}
}

// slotMap returns the map now; nil before the cluster was first reached.
func (p *Proxy) slotMap() *cluster.Map { return p.cl.m.Load() }

// refreshTopology asks the nodes for the slot map (cluster.Agree: the
// first map two nodes give alike) and installs it when it is not the one
// the proxy has: one node with a stale or partitioned view can neither
// move the proxy's traffic nor keep it where the others have left.
func (p *Proxy) refreshTopology() {
	cl := p.cl
	cur := cl.m.Load()
	var candidates []string
	if cur != nil {
		candidates = append(candidates, cur.Nodes...)
	}
	for _, s := range cl.seeds {
		if !slices.Contains(candidates, s) {
			candidates = append(candidates, s)
		}
	}
	m, disagreed, errs := cluster.Agree(candidates, p.readTopology)
	if disagreed {
		p.log.Warn("cluster nodes disagree on the slot map; believing the first map a second node confirms", "confirmed", m != nil)
	}
	switch {
	case m == nil:
		if disagreed {
			cl.disagreements.Add(1)
		}
		p.setTopologyErr(errors.Join(errs...))
		if cur == nil {
			p.log.Warn("cannot read the cluster's slot map yet", "seeds", cl.seeds, "err", errors.Join(errs...))
		}
	case cur != nil && m.Equal(cur):
		p.setTopologyErr(nil)
	default:
		p.installMap(m)
	}
}

func (p *Proxy) installMap(m *cluster.Map) {
	old := p.cl.m.Swap(m)
	p.cl.refreshes.Add(1)
	p.setTopologyErr(nil)
	if old != nil {
		p.log.Info("cluster slot map changed", "primaries", m.Primaries)
	}
}

func (p *Proxy) setTopologyErr(err error) {
	p.cl.mu.Lock()
	p.cl.lastErr = err
	p.cl.mu.Unlock()
}

func (p *Proxy) topologyErr() error {
	p.cl.mu.Lock()
	defer p.cl.mu.Unlock()
	return p.cl.lastErr
}

// readTopology asks one node: CLUSTER SHARDS, or CLUSTER SLOTS where that
// is refused (servers before 7.0).
func (p *Proxy) readTopology(addr string) (*cluster.Map, error) {
	r, err := p.nodeDo(addr, 2, "", resp.AppendCommandStrings(nil, "CLUSTER", "SHARDS"))
	if err != nil {
		return nil, err
	}
	v, _, err := resp.Parse(r[0])
	if err != nil {
		return nil, err
	}
	if v.Type != '-' {
		return cluster.FromShards(v, p.upstreamTLS() != nil, addr)
	}
	r, err = p.nodeDo(addr, 2, "", resp.AppendCommandStrings(nil, "CLUSTER", "SLOTS"))
	if err != nil {
		return nil, err
	}
	if v, _, err = resp.Parse(r[0]); err != nil {
		return nil, err
	}
	return cluster.FromSlots(v, addr)
}

// mapSize is how many primaries the map names and how many slots they serve.
func (p *Proxy) mapSize() (prims, covered int64) {
	if m := p.slotMap(); m != nil {
		return int64(len(m.Primaries)), int64(m.Covered())
	}
	return 0, 0
}

// clusterAddr is where a connection with no slot to go by is opened (the
// side connection, a keyless command's first connection): a primary, or a
// seed before any map was read.
func (p *Proxy) clusterAddr() (string, error) {
	if m := p.slotMap(); m != nil && len(m.Primaries) > 0 {
		return m.Primaries[0], nil
	}
	if len(p.cl.seeds) == 0 {
		return "", errors.New("no cluster seeds")
	}
	return p.cl.seeds[0], nil
}
