package locks

import (
	"net"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/upstream"
)

// The epoch in front of a cluster (docs/failover.md). A grant mints above
// epoch × 2^32, the epoch being the node's config epoch × 256
// (cluster_my_epoch, read by the grant itself: fnGrant), or one above the
// epoch clue "known", whichever is higher. A failover gives the promoted
// replica a config epoch above every node's: its grants are above every
// token its old primary minted. A node restarted without persistence
// keeps its config epoch (nodes.conf) but not its counters: a new run id
// on a node's address shows it, on the first connection to the node after
// the restart (LearnNode, before the connection is handed out), and
// "known" then rises to at least every epoch the node's old run minted
// under: its config epoch × 256, and one above the "known" in force.

// LearnNode reads a cluster node's run id and config epoch on a new
// connection (INFO server, CLUSTER INFO: read-only, none fails), and on a
// new run id at an address seen before raises the epoch clue.
func (k *Keeper) LearnNode(nc net.Conn) error {
	k.host.Own(nc, 2)
	replies, err := upstream.RoundTrip(nc, [][]string{{"INFO", "server"}, {"CLUSTER", "INFO"}})
	if err != nil {
		return err
	}
	run, _, err := parseServerInfo(replies[0])
	if err != nil {
		k.log.Warn("cannot learn the cluster node's run id on this connection", "error", err)
		return nil
	}
	myEpoch, ok := cluster.MyEpoch(replies[1])
	if !ok {
		k.log.Warn("cannot learn the cluster node's config epoch on this connection", "reply", string(replies[1]))
		return nil
	}
	addr := nc.RemoteAddr().String()
	k.epochs.mu.Lock()
	defer k.epochs.mu.Unlock()
	if k.epochs.nodeRuns == nil {
		k.epochs.nodeRuns = make(map[string]string)
	}
	was, seen := k.epochs.nodeRuns[addr]
	k.epochs.nodeRuns[addr] = run
	if !seen || was == run {
		return nil
	}
	// Restarted: every epoch its old run minted under is to exceed.
	k.epochs.prev = max(k.epochs.prev+1, myEpoch*epochPerFailover, k.epochs.cur)
	k.Clue.Set("", k.epochs.prev)
	k.log.Info("a cluster node restarted (a new run id): its grants mint above the epochs used before", "node", addr, "run_id", run, "epoch_above", k.epochs.prev)
	return nil
}

// An allowed FLUSHALL or FLUSHDB in front of a cluster (the proxy's
// fan-out) deletes every node's counters: the grants after it must mint
// above every epoch used before it. The flush is sent to each primary followed by CLUSTER
// INFO, and the epoch clue rises to at least the highest config epoch ×
// 256 and one above the clue in force (RaiseClusterEpoch), before the
// flush (the grants that race it mint above every earlier one) and once
// every primary answered it.

// RaiseClusterEpoch raises the epoch clue above every epoch in use: one
// above the clue in force, the config epoch top × 256, and every epoch
// this instance saw in a token.
func (k *Keeper) RaiseClusterEpoch(top int64) {
	k.epochs.mu.Lock()
	defer k.epochs.mu.Unlock()
	k.epochs.prev = max(k.epochs.prev+1, top*epochPerFailover, k.epochs.cur)
	k.Clue.Set("", k.epochs.prev)
}
