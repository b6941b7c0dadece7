package proxy

import (
	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// clusterRoute runs for every command in front of a cluster, before the lock
// rules: it sets s.node to the primary of the slot the command's keys are in
// (so the usual path sends it there), or answers the command itself — a
// CLUSTER command (cluster_face.go), SELECT of another database, keys in
// several slots (split, or refused: cluster_split.go), a slot no primary
// serves. It reports whether it answered.
func (s *session) clusterRoute(cmd resp.Command, k kind) bool {
	args := cmd.Args
	switch {
	case k == kSelect:
		if len(args) == 2 && string(args[1]) != "0" {
			s.local(resp.AppendError(nil, errClusterSelect))
			return true
		}
	case isClusterFaceCommand(args[0]):
		s.clusterFace(cmd)
		return true
	}
	if s.spreads() && s.holdForNode(args) {
		return true // sent with the next command, to its node (tracking.go)
	}
	if s.ded != nil && s.ownMovable && !s.statelessOwn(k, args) {
		s.ownMovable = false // the connection now holds state of the client's
	}
	d := s.p.decider.Load()
	if d.Table == nil {
		d = s.p.loadTable()
		if d.Table == nil {
			s.local(resp.AppendError(nil, s.p.noTableError()))
			return true
		}
	}
	keys, _ := d.Table.Keys(args, s.keys[:0])
	s.keys = keys[:0]
	if isShardChannelCommand(args[0]) && len(args) > 1 {
		return s.routeShardChannels(args)
	}
	shares := s.ded == nil || s.spreads() && !s.inMulti && !s.ded.Streaming()
	if len(keys) == 0 && shares && idOf(args[0]) == cScan && s.scan(cmd) {
		return true
	}
	if len(keys) == 0 && shares && forwarded(k) {
		if c := d.Table.Command(args); c != nil && !notFannedOut(args[0]) {
			if rp, fan := fanOutPolicy(c); fan {
				s.fanOut(cmd, rp, d)
				return true
			}
		}
	}
	if len(keys) == 0 {
		// Keyless (PING, INFO, SCRIPT LOAD, ...): where the session's last
		// command went, so it need not switch connections.
		if s.node == "" || s.ded == nil && !s.p.cl.IsPrimary(s.node) {
			s.node = s.p.cl.KeylessNode(s.id)
		}
		if s.ded == nil && k == kDedicated && s.statelessOwn(k, args) {
			s.ownMovable = true // MULTI: the transaction's first key may move it
		}
		if s.trk != nil {
			s.sendHeld()
		}
		return s.dialFirst()
	}
	slot := cluster.Slot(args[keys[0].Index])
	for _, key := range keys[1:] {
		if cluster.Slot(args[key.Index]) != slot {
			s.crossSlot(cmd, keys, d)
			return true
		}
	}
	if !s.routeSlot(slot) {
		return true
	}
	if s.ded == nil && k == kDedicated && s.statelessOwn(k, args) {
		s.ownMovable = true // a blocking command: its connection may be left after it
	}
	if s.trk != nil {
		s.sendHeld()
	}
	return s.dialFirst()
}

// dialFirst, on an event loop, asks for the shared connection of s.node's
// pool to be dialled off the loop when the session has none there yet
// (needsDial; asked here, once the command has chosen its node), and the
// command handled again then (dialStep). It reports whether it asked.
func (s *session) dialFirst() bool {
	if s.lp == nil || s.ded != nil || !s.needsDial(s.key()) {
		return false
	}
	s.asked = s.dialStep(s.key())
	return true
}

// isShardChannelCommand: SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH name shard
// channels, which Valkey places in the slot of the channel's name as if it
// were a key (their key specs say NOT_KEY, so the table finds no keys).
func isShardChannelCommand(name []byte) bool {
	return flagsOf(name)&fShardChannel != 0
}

// routeShardChannels routes by the channels' slot: SPUBLISH by its channel,
// SSUBSCRIBE and SUNSUBSCRIBE by all of theirs, which must share one slot
// as Valkey requires. It reports whether it answered the client.
func (s *session) routeShardChannels(args [][]byte) bool {
	if s.unsubscribeFollowed(args) {
		return true // channels the proxy follows on another node
	}
	chans := args[1:]
	if idOf(args[0]) == cSPublish {
		chans = args[1:2]
	}
	slot := cluster.Slot(chans[0])
	for _, c := range chans[1:] {
		if cluster.Slot(c) != slot {
			s.local(resp.AppendError(nil, errCrossSlot))
			return true
		}
	}
	return !s.routeSlot(slot)
}

// statelessOwn reports whether a command leaves no state on the session's
// own connection that a later command depends on: MULTI (the transaction
// ends with EXEC or DISCARD, kForward), blocking commands, and everything
// that shares connections anyway. WATCH, subscriptions, CLIENT TRACKING,
// an AUTH sent on it, READONLY and the like do leave state.
func (s *session) statelessOwn(k kind, args [][]byte) bool {
	switch k {
	case kForward, kServer, kLong, kXRead, kInfo, kAdmin, kQuit, kSelect:
		return true
	case kDedicated:
		if idOf(args[0]) == cMulti {
			return true
		}
		// WAIT and WAITAOF too: a new connection's handshake writes
		// (SCRIPT LOAD, replicated), so the next WAIT on the node counts
		// the writes the session made there before it.
		_, blocking := s.p.cmds().blockingWait(args)
		return blocking
	}
	return false
}

// routeScript routes a lock script by its first key. Every key of a lock
// script is in that key's slot by construction (the counter and records
// take the lock's hash tag, or wrap the lock in one) except where the lock
// name makes that impossible (a '}' with no valid tag before it) or a fence
// guards a key of another slot: the script is then refused, as Valkey would
// refuse it, with a sentence. It reports false when it answered the client.
func (s *session) routeScript(keys [][]byte) bool {
	if len(keys) == 0 {
		return true
	}
	slot := cluster.Slot(keys[0])
	for _, k := range keys[1:] {
		if cluster.Slot(k) != slot {
			s.local(resp.AppendError(nil, errClusterLockSlot(string(keys[0]), string(k))))
			return false
		}
	}
	return s.routeSlot(slot)
}

// routeSlot sets s.node to slot's primary. It reports false, having
// answered the client, when there is none, or when the session's own
// connection is on another node.
func (s *session) routeSlot(slot uint16) bool {
	m := s.p.cl.Map()
	if m == nil {
		if s.lp != nil && !s.learned.mapRead {
			// Reading the map waits for the nodes: off the loop, then
			// the command is handled again (offLoop).
			s.offLoop(func() {
				s.p.cl.Refresh()
				s.learned.mapRead = true
			})
			return false
		}
		if !s.learned.mapRead {
			s.p.cl.Refresh()
		}
		s.learned.mapRead = false
		if m = s.p.cl.Map(); m == nil {
			s.local(s.p.cl.NoMap())
			return false
		}
	}
	if m != s.sentMap && s.ded == nil {
		// The map changed since the session's last command went: one
		// still in flight under the old map may be redirected to where
		// this one would now go straight, and must run there first, as
		// it came first. Map changes are rare (a slot moved, a
		// failover): the wait is too.
		if s.sentMap != nil && s.inflight.Load()+int64(len(s.bpend)) > 0 {
			if s.lp != nil {
				if s.asideFirst() {
					return false // handled again once they are in
				}
			} else {
				s.flush()
				s.waitDrain(0)
			}
		}
		s.sentMap = m
	}
	addr, ok := m.Primary(slot)
	if !ok {
		s.p.cl.RefreshSoon()
		s.local(resp.AppendError(nil, errClusterDown(slot)))
		return false
	}
	if s.ded != nil && s.ded.Addr() != addr {
		switch {
		case s.spreads() && !s.ded.Streaming() && (!s.inMulti || s.trk.MultiHeld):
			// Tracking: a connection of the session's own on every
			// node (tracking.go).
			if !s.spreadTo(addr) {
				return false
			}
		case s.ownMovable && s.inMulti && len(s.multiShape) == 0:
			s.node = addr
			return s.moveMulti()
		case s.ownMovable && !s.inMulti && !s.ded.Streaming():
			s.leaveOwnConn()
		default:
			s.refuseOwnConn(addr)
			return false
		}
	}
	s.node = addr
	return true
}

// leaveOwnConn closes the session's own connection, which holds nothing a
// later command needs (see statelessOwn), after the replies owed on it: the
// session shares connections again, and can reach every node.
func (s *session) leaveOwnConn() {
	old := s.takeOwnConn()
	s.p.stats.dedicated.Add(-1)
	s.ownMovable = false
	old.Close()
}

// takeOwnConn detaches the session's own connection, after the replies owed
// on it, and returns it.
func (s *session) takeOwnConn() *upstream.Conn {
	s.flush()
	s.waitDrain(0)
	old := s.ded
	s.dedMu.Lock()
	s.ded = nil
	s.dedMu.Unlock()
	s.last = nil
	return old
}

// refuseOwnConn answers a command whose slot is on another node than the
// session's own connection. In a transaction the refusal is a queue-time
// error, so that EXEC aborts as Valkey's own CROSSSLOT would make it.
func (s *session) refuseOwnConn(addr string) {
	if s.inMulti {
		msg := errClusterMultiSlot
		s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"),
			func([]byte) []byte { return resp.AppendError(nil, msg) }, nil)
		return
	}
	s.local(resp.AppendError(nil, errClusterOwnConn(s.ded.Addr(), addr)))
}

// moveMulti moves a transaction that has no command queued yet, opened on
// some node's connection, to s.node, the node of its first key: a new
// connection there gets the MULTI (its +OK was the client's already), the
// old one is closed. It reports false, having answered the client, when the
// dial fails.
func (s *session) moveMulti() bool {
	old := s.takeOwnConn()
	if !s.goDedicated(true) {
		// The client has the dial's error for this command; the old
		// transaction must abort at EXEC as if Valkey had refused it.
		s.dedMu.Lock()
		s.ded = old
		s.dedMu.Unlock()
		s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"), func([]byte) []byte { return nil }, nil)
		return false
	}
	s.p.stats.dedicated.Add(-1) // the same session's, moved
	old.Close()
	s.forward(resp.AppendCommandStrings(nil, "MULTI"), func([]byte) []byte { return nil })
	return true
}

// clusterKeys is the keys of a command found by the table, as byte slices.
func clusterKeys(args [][]byte, keys []keyspec.Key) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = args[k.Index]
	}
	return out
}
