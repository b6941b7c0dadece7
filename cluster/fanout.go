package cluster

import (
	"strings"

	"github.com/lockproxy/lockproxy/resp"
)

// Keyless commands that concern the whole keyspace (DBSIZE, KEYS,
// FLUSHALL, SCRIPT LOAD, FUNCTION LOAD, ...) go to every primary, and their
// replies are folded into one, as Valkey's command tips tell cluster
// clients to: request_policy all_shards or all_nodes, then response_policy
// agg_sum, all_succeeded, one_succeeded, agg_logical_and/or, or (none) the
// arrays concatenated. Replicas are not asked: the proxy sends every
// command to primaries, and scripts and functions reach replicas by
// replication of their effects.

// FoldKind is how the primaries' replies to one command become one.
type FoldKind uint8

const (
	FoldConcat FoldKind = iota // no response_policy: arrays concatenated
	FoldSum                    // agg_sum
	FoldAllOK                  // all_succeeded
	FoldOneOK                  // one_succeeded
	FoldAnd                    // agg_logical_and
	FoldOr                     // agg_logical_or
	FoldAny                    // special (RANDOMKEY): one primary's answer, chosen at random
)

// FanOutPolicy reads a command's tips (COMMAND DOCS/INFO): fan is false
// for a command that goes to one node.
func FanOutPolicy(tips []string) (k FoldKind, fan bool) {
	k = FoldConcat
	special := false
	for _, tip := range tips {
		switch {
		case tip == "request_policy:all_shards", tip == "request_policy:all_nodes":
			fan = true
		case tip == "response_policy:agg_sum":
			k = FoldSum
		case tip == "response_policy:all_succeeded":
			k = FoldAllOK
		case tip == "response_policy:one_succeeded":
			k = FoldOneOK
		case tip == "response_policy:agg_logical_and":
			k = FoldAnd
		case tip == "response_policy:agg_logical_or":
			k = FoldOr
		case strings.HasPrefix(tip, "response_policy:special"):
			special = true
		}
	}
	if special {
		k = FoldAny
	}
	return k, fan
}

// Fold folds the primaries' replies (at least one) as the response policy
// says.
func Fold(k FoldKind, replies [][]byte) []byte {
	firstErr := func() []byte {
		for _, r := range replies {
			if isError(r) {
				return r
			}
		}
		return nil
	}
	switch k {
	case FoldAny:
		return replies[0]
	case FoldOneOK:
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
	switch k {
	case FoldAllOK:
		return replies[0]
	case FoldSum:
		var sum int64
		for _, r := range replies {
			n, ok := resp.ReplyInt(r)
			if !ok {
				return r
			}
			sum += n
		}
		return resp.AppendInt(nil, sum)
	case FoldAnd, FoldOr:
		var acc [][]byte
		for i, r := range replies {
			els, ok := Elements(r)
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
				if (k == FoldAnd && a != 0 && b == 0) || (k == FoldOr && a == 0 && b != 0) {
					acc[j] = el
				}
			}
		}
		return AppendArray(nil, acc)
	}
	// Concatenated: every reply an array (KEYS), else the first as it is.
	var all [][]byte
	for _, r := range replies {
		els, ok := Elements(r)
		if !ok {
			return replies[0]
		}
		all = append(all, els...)
	}
	return AppendArray(nil, all)
}

// FanOut sends raw to each of nodes in turn (in protocol proto, logged in
// as login) and folds their replies (Fold). With raise set the command is
// a flush, which deletes every node's counters: raise is given the highest
// config epoch before it is sent, and again once every node answered it
// (read from a CLUSTER INFO sent after it on each node), or when a node
// failed after others ran it (TopEpoch). ok is false when a node could not
// be reached: out is then the host's LostText. It waits for the nodes.
func (v *View) FanOut(nodes []string, raw []byte, k FoldKind, proto int, login string, raise func(top int64)) (out []byte, ok bool) {
	flush := raise != nil
	if flush {
		raise(v.TopEpoch(nodes, proto, login, nil))
	}
	replies := make([][]byte, 0, len(nodes))
	cmds := [][]byte{raw}
	if flush {
		cmds = append(cmds, InfoCommand)
	}
	var infos [][]byte
	for _, addr := range nodes {
		r, err := v.host.Do(addr, proto, login, cmds...)
		if err != nil {
			v.RefreshSoon()
			if len(infos) > 0 {
				raise(v.TopEpoch(nodes, proto, login, nil))
			}
			return resp.AppendError(nil, v.host.LostText(addr, err)), false
		}
		replies = append(replies, r[0])
		if flush {
			infos = append(infos, r[1])
		}
	}
	if flush {
		raise(v.TopEpoch(nil, proto, login, infos))
	}
	return Fold(k, replies), true
}
