package proxy

import (
	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/commands"
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
	switch f := commands.FlagsOf(name); {
	case f&commands.SplitSum != 0:
		return cluster.SplitSum
	case f&commands.SplitMGet != 0:
		return cluster.SplitMGet
	case f&commands.SplitMSet != 0:
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
		s.p.cl.Stats.Splits.Add(1)
		return s.p.cl.RunSplit(parts, sk, proto, login, nkeys)
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
