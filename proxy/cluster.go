package proxy

import (
	"sync"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/upstream"
)

// clusterState is the proxy's part of being in front of a cluster: the
// view of the cluster (package cluster: the slot map now, what keeps it
// current, redirects followed, split commands run), and what is the
// proxy's own: the face clients see, the node connections the view asks
// through, the scripts' wrappers sent to each node.
type clusterState struct {
	*cluster.View

	face config.ClusterFace // cluster_face

	conns upstream.Plains // the request-reply node connections (nodeDo)

	// wrappersSent: the wrappers of clients' scripts sent to each node
	// (cluster_scripts.go).
	wrappersSent sync.Map
}

// startCluster starts the view of the cluster: it reads the topology once
// (a cluster that cannot be reached is not an error: commands get one
// until it can) and keeps it current. The view asks the nodes through
// nodeDo and words its errors with the proxy's catalogue.
func (p *Proxy) startCluster() {
	c := p.opts.Upstream.Cluster
	p.cl = &clusterState{face: p.opts.ClusterFace}
	p.cl.View = cluster.NewView(cluster.Host{
		WG:            &p.wg,
		Log:           p.log,
		Do:            p.nodeDo,
		TLS:           func() bool { return p.upstreamTLS() != nil },
		LostText:      errUpstreamLost,
		NoMapText:     errClusterNoMap,
		DownText:      errClusterDown,
		RedirectsText: errClusterRedirects,
		OwnMovedText:  errClusterOwnMoved,
	}, c.Seeds, c.Refresh.D())
	p.connector.Target.Cluster = p.cl.View
	p.cl.Start()
}

func (p *Proxy) stopCluster() {
	if p.cl == nil {
		return
	}
	p.cl.Stop()
	p.cl.conns.CloseAll()
}
