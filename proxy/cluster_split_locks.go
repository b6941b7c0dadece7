package proxy

import (
	"sync"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// A DEL or UNLINK of lock keys in several slots is split like one of plain
// keys, one command per slot, but each part goes the way the client's own
// command would: through the lock rules (the release script, which deletes
// only the locks the client holds), on the session's connections. The
// counts are added up; a part refused (NOTOWNER, ...) makes its error the
// reply, the other parts having run, as a split is not atomic across slots.
// Keys a fence guards and lockproxy's own keys are still refused whole
// (crossSlot): their checks span the command.

// locksOnly reports whether a DEL or UNLINK touches lock keys, and no
// protected key that is not one, so that it may be split by slot.
func locksOnly(args [][]byte, keys []keyspec.Key, d *rewrite.Decider) bool {
	if !d.Active() || commands.FlagsOf(args[0])&commands.Delete == 0 {
		return false
	}
	locks := false
	for _, k := range keys {
		key := args[k.Index]
		if !d.Protected(key) {
			continue
		}
		if d.Rules.Match(key) == nil {
			return false
		}
		locks = true
	}
	return locks
}

// splitLocks runs a DEL or UNLINK of lock keys in several slots as one
// command per slot, each handled as the client's own, and answers with
// the counts added up. The session runs on a goroutine of its own
// (crossSlot asks an event loop for one). Each part's reply is taken (capture) instead of given.
func (s *session) splitLocks(args [][]byte, keys []keyspec.Key) {
	parts := cluster.Split(args, keyAt(keys), cluster.SplitSum)
	replies := make([][]byte, len(parts))
	var mu sync.Mutex
	mute := s.mute
	s.mute = true
	for i, pt := range parts {
		i := i
		s.capture = func(r []byte) {
			mu.Lock()
			replies[i] = append([]byte(nil), r...)
			mu.Unlock()
		}
		cmd := resp.Command{Raw: resp.AppendCommand(nil, pt.Cmd...), Args: pt.Cmd}
		if s.routeSlot(pt.Slot) && !s.lockPlan(cmd) {
			s.forward(cmd.Raw, nil)
		}
	}
	s.capture = nil
	s.flush()
	s.waitDrain(0)
	s.mute = mute
	mu.Lock()
	defer mu.Unlock()
	s.local(cluster.Fold(cluster.FoldSum, replies))
}
