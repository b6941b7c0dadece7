package proxy

import (
	"bytes"
	"math/rand/v2"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Keyless commands that concern the whole keyspace (DBSIZE, KEYS,
// FLUSHALL, SCRIPT LOAD, ...) go to every primary, as their command tips
// say, and the replies are folded into one (cluster.FanOutPolicy,
// cluster.Fold).

// notFannedOut names the commands whose tips say all_shards but whose
// answer from one primary is what a client of the proxy asks: PING (the
// proxy is reachable, and so is a node), INFO (its sections are one
// server's; INFO lockproxy is the proxy's own). WAIT and WAITAOF take a
// connection of their own and never get here.
func notFannedOut(name []byte) bool {
	return commands.FlagsOf(name)&commands.OneServer != 0
}

// fanOutPolicy reads a command's tips: fan is false for a command that
// goes to one node.
func fanOutPolicy(c *keyspec.Command) (k cluster.FoldKind, fan bool) {
	return cluster.FanOutPolicy(c.Tips)
}

// fanOut runs a keyless command on every primary and answers with the
// folded reply. A FLUSHALL or FLUSHDB is first put to the lock rules'
// on_flush, as on a single primary. It waits for the replies, once every
// reply the session is owed before it is in (aside).
func (s *session) fanOut(cmd resp.Command, rp cluster.FoldKind, d *rewrite.Decider) {
	if s.asideFirst() {
		return // handled again once the earlier replies are in
	}
	var plan rewrite.Plan
	if d.Active() {
		plan = d.Decide(cmd.Args, s, s.keys[:0])
		if plan.Kind == rewrite.Refuse {
			s.apply(plan.Effects, nil)
			s.local(resp.AppendError(nil, plan.Err))
			return
		}
	}
	m := s.p.cl.Map()
	if m == nil || len(m.Primaries) == 0 {
		s.local(s.p.cl.NoMap())
		return
	}
	nodes := m.Primaries
	if rp == cluster.FoldAny {
		nodes = []string{nodes[rand.IntN(len(nodes))]}
	}
	raw, proto, login := bytes.Clone(cmd.Raw), s.proto, s.login
	var raise func(int64) // a flush: the epoch clue rises around it (package locks: epoch_cluster.go)
	if len(plan.Effects) > 0 && plan.Effects[0].Kind == rewrite.Flushed {
		raise = s.p.locks.RaiseClusterEpoch
	}
	s.aside(func() []byte {
		s.p.cl.Stats.Splits.Add(1)
		out, ok := s.p.cl.FanOut(nodes, raw, rp, proto, login, raise)
		if !ok {
			return out
		}
		if len(plan.Effects) > 0 {
			s.apply(plan.Effects, out)
		}
		return out
	})
}
