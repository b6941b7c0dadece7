package proxy

import (
	"bytes"
	"net"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
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
// the restart (learnNodeRun, before the connection is handed out), and
// "known" then rises to at least every epoch the node's old run minted
// under: its config epoch × 256, and one above the "known" in force.

// learnNodeRun reads a cluster node's run id and config epoch on a new
// connection (INFO server, CLUSTER INFO: read-only, none fails), and on a
// new run id at an address seen before raises the epoch clue.
func (p *Proxy) learnNodeRun(nc net.Conn) error {
	p.own.Add(nc, 2) // kept out of MONITOR, as the handshake is (clients.OwnLines)
	replies, err := upstream.RoundTrip(nc, [][]string{{"INFO", "server"}, {"CLUSTER", "INFO"}})
	if err != nil {
		return err
	}
	run, _, err := parseServerInfo(replies[0])
	if err != nil {
		p.log.Warn("cannot learn the cluster node's run id on this connection", "error", err)
		return nil
	}
	myEpoch, ok := cluster.MyEpoch(replies[1])
	if !ok {
		p.log.Warn("cannot learn the cluster node's config epoch on this connection", "reply", string(replies[1]))
		return nil
	}
	addr := nc.RemoteAddr().String()
	p.epochs.mu.Lock()
	defer p.epochs.mu.Unlock()
	if p.epochs.nodeRuns == nil {
		p.epochs.nodeRuns = make(map[string]string)
	}
	was, seen := p.epochs.nodeRuns[addr]
	p.epochs.nodeRuns[addr] = run
	if !seen || was == run {
		return nil
	}
	// Restarted: every epoch its old run minted under is to exceed.
	p.epochs.prev = max(p.epochs.prev+1, myEpoch*epochPerFailover, p.epochs.cur)
	p.epochClue.Set("", p.epochs.prev)
	p.log.Info("a cluster node restarted (a new run id): its grants mint above the epochs used before", "node", addr, "run_id", run, "epoch_above", p.epochs.prev)
	return nil
}

// reclue puts the epoch clue in force now into a plan that mints a token,
// in front of a cluster: the plan was decided before the session reached
// the node, and the connection that reaches it may be the first since it
// restarted (learnNodeRun). It reports false when the command was put back
// to be handled again once the node's connection is dialled (an event
// loop: dialFirst), or answered (the dial failed).
func (s *session) reclue(args [][]byte, at int) bool {
	if s.dialFirst() {
		return false
	}
	if s.target() == nil {
		return false
	}
	args[at] = s.p.epochClue.Known()
	return true
}

// An allowed FLUSHALL or FLUSHDB in front of a cluster (fanOut) deletes
// every node's counters: the grants after it must mint above every epoch
// used before it. The flush is sent to each primary followed by CLUSTER
// INFO, and the epoch clue rises to at least the highest config epoch ×
// 256 and one above the clue in force (raiseClusterEpoch), before the
// flush (the grants that race it mint above every earlier one) and once
// every primary answered it.

// raiseClusterEpoch raises the epoch clue above every epoch in use: one
// above the clue in force, the config epoch top × 256, and every epoch
// this instance saw in a token.
func (p *Proxy) raiseClusterEpoch(top int64) {
	p.epochs.mu.Lock()
	defer p.epochs.mu.Unlock()
	p.epochs.prev = max(p.epochs.prev+1, top*epochPerFailover, p.epochs.cur)
	p.epochClue.Set("", p.epochs.prev)
}

// A flush on a session's own connection in front of a cluster (queued in
// a transaction) goes to that connection's node as it came. The clue is
// raised as around fanOut's: before it is queued, above every primary's
// config epoch × 256 (asked of each: an event loop asks off the loop and
// handles the command again), and again once EXEC answered it (Plan.Learn,
// with the epochs read before: only the node it went to was flushed, and
// a config epoch that rose since is a failover, whose promoted node's own
// epoch is above every earlier one).

type flushTop struct {
	raw []byte
	top int64
}

// raiseBeforeFlush raises the clue before a flush on the session's own
// connection and returns the highest config epoch it found; false when
// the command was put back, to be handled again once that is done.
func (s *session) raiseBeforeFlush(cmd resp.Command) (int64, bool) {
	if f := s.learned.flushTop; f != nil && bytes.Equal(f.raw, cmd.Raw) {
		s.learned.flushTop = nil
		return f.top, true
	}
	var nodes []string
	if m := s.p.cl.Map(); m != nil {
		nodes = m.Primaries
	}
	proto, login := s.proto, s.login
	if s.lp != nil {
		raw := bytes.Clone(cmd.Raw)
		s.offLoop(func() {
			top := s.p.cl.TopEpoch(nodes, proto, login, nil)
			s.p.raiseClusterEpoch(top)
			s.learned.flushTop = &flushTop{raw: raw, top: top}
		})
		return 0, false
	}
	top := s.p.cl.TopEpoch(nodes, proto, login, nil)
	s.p.raiseClusterEpoch(top)
	return top, true
}
