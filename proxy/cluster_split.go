package proxy

import (
	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// How a command whose keys span slots is answered in a cluster, by its
// family in the command table (fSplitSum, fSplitMGet, fSplitMSet): split
// into one command per slot and the replies combined (cluster.Split,
// cluster.Combine). Every other command gets Valkey's own CROSSSLOT.

// splitOf is how a command name is split across slots.
func splitOf(name []byte) cluster.SplitKind {
	switch f := flagsOf(name); {
	case f&fSplitSum != 0:
		return cluster.SplitSum
	case f&fSplitMGet != 0:
		return cluster.SplitMGet
	case f&fSplitMSet != 0:
		return cluster.SplitMSet
	}
	return cluster.SplitNone
}

// crossSlot answers a command whose keys are in more than one slot. One
// that touches a lock, a guarded key or lockproxy's own keys is refused: the
// lock rules decide a command whole, and its parts would run on different
// nodes, each without the others. On the session's own connection
// (MULTI, ...) nothing is split either: the parts would leave it.
func (s *session) crossSlot(cmd resp.Command, keys []keyspec.Key, d *rewrite.Decider) {
	args := cmd.Args
	sk := splitOf(args[0])
	if (s.ded == nil || s.spreads() && !s.inMulti) && locksOnly(args, keys, d) {
		if s.lp != nil {
			// It waits for each part's reply: on a goroutine of the
			// session's own, where it is handled again.
			s.asked = step{do: stepOwnConn}
			return
		}
		s.splitLocks(args, keys) // cluster_split_locks.go
		return
	}
	for _, k := range keys {
		if d.Protected(args[k.Index]) {
			s.local(resp.AppendError(nil, errClusterCrossSlotLock(string(args[0]), string(args[k.Index]))))
			return
		}
	}
	if sk == cluster.SplitNone || s.ded != nil {
		if s.ded != nil && s.inMulti {
			s.refuseOwnConn("")
			return
		}
		s.local(resp.AppendError(nil, errCrossSlot))
		return
	}
	if sk == cluster.SplitMSet && len(args)%2 != 1 {
		s.local(resp.AppendError(nil, errWrongArgs("mset")))
		return
	}
	parts := cluster.Split(args, keyAt(keys), sk)
	proto, login, nkeys := s.proto, s.login, len(keys)
	s.aside(func() []byte {
		s.p.cl.splits.Add(1)
		return s.p.runSplit(parts, sk, proto, login, nkeys)
	})
}

// keyAt is where the keys the table found are in the command's arguments.
func keyAt(keys []keyspec.Key) []int {
	at := make([]int, len(keys))
	for i, k := range keys {
		at[i] = k.Index
	}
	return at
}

// runSplit runs each slot's part on its primary and combines the replies.
// It waits for them: see aside, which calls it once every earlier reply of
// the session is in (its parts must not overtake earlier commands).
func (p *Proxy) runSplit(parts []*cluster.Part, sk cluster.SplitKind, proto int, login string, nkeys int) []byte {
	m := p.slotMap()
	if m == nil {
		return resp.AppendError(nil, errClusterNoMap(p.topologyErr()))
	}
	replies := make([][]byte, len(parts))
	for i, pt := range parts {
		addr, ok := m.Primary(pt.Slot)
		if !ok {
			return resp.AppendError(nil, errClusterDown(pt.Slot))
		}
		raw := resp.AppendCommand(nil, pt.Cmd...)
		r, err := p.nodeDo(addr, proto, login, raw)
		if err != nil {
			p.cl.refreshSoon()
			return resp.AppendError(nil, errUpstreamLost(addr, err))
		}
		fr := r[0]
		if len(fr) > 0 && fr[0] == '-' {
			fr = p.redirected(&clusterCmd{raw: raw, proto: proto, login: login}, fr, addr)
		}
		replies[i] = fr
	}
	return cluster.Combine(sk, parts, replies, nkeys)
}
