package proxy

import (
	"bytes"

	"github.com/lockproxy/lockproxy/resp"
)

// The epoch in front of a cluster (docs/failover.md; package locks:
// Keeper.LearnNode, Keeper.RaiseClusterEpoch): what a session does about
// it. A plan that mints a token carries the clue in force when it reaches
// the node, and a flush on the session's own connection raises the clue
// around it.

// reclue puts the epoch clue in force now into a plan that mints a token,
// in front of a cluster: the plan was decided before the session reached
// the node, and the connection that reaches it may be the first since it
// restarted (locks.Keeper.LearnNode). It reports false when the command
// was put back to be handled again once the node's connection is dialled
// (an event loop: dialFirst), or answered (the dial failed).
func (s *session) reclue(args [][]byte, at int) bool {
	if s.dialFirst() {
		return false
	}
	if s.target() == nil {
		return false
	}
	args[at] = s.p.locks.Clue.Known()
	return true
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
			s.p.locks.RaiseClusterEpoch(top)
			s.learned.flushTop = &flushTop{raw: raw, top: top}
		})
		return 0, false
	}
	top := s.p.cl.TopEpoch(nodes, proto, login, nil)
	s.p.locks.RaiseClusterEpoch(top)
	return top, true
}
