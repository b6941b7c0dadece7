package proxy

import (
	"bytes"
	"math/rand/v2"
	"strings"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Keyless commands that concern the whole keyspace (DBSIZE, KEYS,
// FLUSHALL, SCRIPT LOAD, FUNCTION LOAD, ...) go to every primary, and their
// replies are folded into one, as Valkey's command tips tell cluster
// clients to: request_policy all_shards or all_nodes, then response_policy
// agg_sum, all_succeeded, one_succeeded, agg_logical_and/or, or (none) the
// arrays concatenated. Replicas are not asked: the proxy sends every
// command to primaries, and scripts and functions reach replicas by
// replication of their effects.

type fanReply uint8

const (
	fanConcat fanReply = iota // no response_policy: arrays concatenated
	fanSum
	fanAllOK
	fanOneOK
	fanAnd
	fanOr
	fanAny // special (RANDOMKEY): one primary's answer, chosen at random
)

// notFannedOut names the commands whose tips say all_shards but whose
// answer from one primary is what a client of the proxy asks: PING (the
// proxy is reachable, and so is a node), INFO (its sections are one
// server's; INFO lockproxy is the proxy's own). WAIT and WAITAOF take a
// connection of their own and never get here.
func notFannedOut(name []byte) bool {
	return flagsOf(name)&fOneServer != 0
}

// fanOutPolicy reads a command's tips: ok is false for a command that goes
// to one node.
func fanOutPolicy(c *keyspec.Command) (fanReply, bool) {
	fan, rp := false, fanConcat
	special := false
	for _, tip := range c.Tips {
		switch {
		case tip == "request_policy:all_shards", tip == "request_policy:all_nodes":
			fan = true
		case tip == "response_policy:agg_sum":
			rp = fanSum
		case tip == "response_policy:all_succeeded":
			rp = fanAllOK
		case tip == "response_policy:one_succeeded":
			rp = fanOneOK
		case tip == "response_policy:agg_logical_and":
			rp = fanAnd
		case tip == "response_policy:agg_logical_or":
			rp = fanOr
		case strings.HasPrefix(tip, "response_policy:special"):
			special = true
		}
	}
	if special {
		rp = fanAny
	}
	return rp, fan
}

// fanOut runs a keyless command on every primary and answers with the
// folded reply. A FLUSHALL or FLUSHDB is first put to the lock rules'
// on_flush, as on a single primary. It waits for the replies, once every
// reply the session is owed before it is in (aside).
func (s *session) fanOut(cmd resp.Command, rp fanReply, d *rewrite.Decider) {
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
	m := s.p.slotMap()
	if m == nil || len(m.Primaries) == 0 {
		s.local(resp.AppendError(nil, errClusterNoMap(s.p.topologyErr())))
		return
	}
	nodes := m.Primaries
	if rp == fanAny {
		nodes = []string{nodes[rand.IntN(len(nodes))]}
	}
	raw, proto, login := bytes.Clone(cmd.Raw), s.proto, s.login
	flush := len(plan.Effects) > 0 && plan.Effects[0].Kind == rewrite.Flushed
	s.aside(func() []byte {
		s.p.cl.splits.Add(1)
		if flush {
			s.p.raiseClusterEpoch(s.p.clusterEpochs(nodes, proto, login, nil))
		}
		replies := make([][]byte, 0, len(nodes))
		cmds := [][]byte{raw}
		if flush {
			cmds = append(cmds, clusterInfoCmd)
		}
		var infos [][]byte
		for _, addr := range nodes {
			r, err := s.p.nodeDo(addr, proto, login, cmds...)
			if err != nil {
				s.p.cl.refreshSoon()
				if len(infos) > 0 {
					s.p.raiseClusterEpoch(s.p.clusterEpochs(nodes, proto, login, nil))
				}
				return resp.AppendError(nil, errUpstreamLost(addr, err))
			}
			replies = append(replies, r[0])
			if flush {
				infos = append(infos, r[1])
			}
		}
		if flush {
			s.p.raiseClusterEpoch(s.p.clusterEpochs(nil, proto, login, infos))
		}
		out := foldFan(rp, replies)
		if len(plan.Effects) > 0 {
			s.apply(plan.Effects, out)
		}
		return out
	})
}

// foldFan folds the primaries' replies as the response policy says.
func foldFan(rp fanReply, replies [][]byte) []byte {
	firstErr := func() []byte {
		for _, r := range replies {
			if len(r) > 0 && r[0] == '-' {
				return r
			}
		}
		return nil
	}
	switch rp {
	case fanAny:
		return replies[0]
	case fanOneOK:
		for _, r := range replies {
			if len(r) > 0 && r[0] != '-' {
				return r
			}
		}
		return replies[0]
	}
	if e := firstErr(); e != nil {
		return e
	}
	switch rp {
	case fanAllOK:
		return replies[0]
	case fanSum:
		var sum int64
		for _, r := range replies {
			n, ok := resp.ReplyInt(r)
			if !ok {
				return r
			}
			sum += n
		}
		return resp.AppendInt(nil, sum)
	case fanAnd, fanOr:
		var acc [][]byte
		for i, r := range replies {
			els, ok := elements(r)
			if !ok || (i > 0 && len(els) != len(acc)) {
				return r
			}
			if i == 0 {
				acc = els
				continue
			}
			for j, el := range els {
				a, _ := resp.ReplyInt(acc[j])
				b, _ := resp.ReplyInt(el)
				if (rp == fanAnd && a != 0 && b == 0) || (rp == fanOr && a == 0 && b != 0) {
					acc[j] = el
				}
			}
		}
		return appendArray(nil, acc)
	}
	// Concatenated: every reply an array (KEYS), else the first as it is.
	var all [][]byte
	for _, r := range replies {
		els, ok := elements(r)
		if !ok {
			return replies[0]
		}
		all = append(all, els...)
	}
	return appendArray(nil, all)
}
