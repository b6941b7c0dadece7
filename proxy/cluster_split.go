package proxy

import (
	"bytes"
	"strconv"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// How a command whose keys span slots is answered in a cluster, by its
// family in the command table (fSplitSum, fSplitMGet, fSplitMSet): split
// into one command per slot and the replies combined, as Envoy's
// redis_proxy does. Every other command gets Valkey's own CROSSSLOT.
type splitKind uint8

const (
	splitNone splitKind = iota
	splitSum            // DEL, UNLINK, EXISTS, TOUCH: the integer replies added up
	splitMGet           // MGET: the values put back in the order of the keys
	splitMSet           // MSET: +OK when every part is; not atomic across slots
)

// splitOf is how a command name is split across slots.
func splitOf(name []byte) splitKind {
	switch f := flagsOf(name); {
	case f&fSplitSum != 0:
		return splitSum
	case f&fSplitMGet != 0:
		return splitMGet
	case f&fSplitMSet != 0:
		return splitMSet
	}
	return splitNone
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
	if sk == splitNone || s.ded != nil {
		if s.ded != nil && s.inMulti {
			s.refuseOwnConn("")
			return
		}
		s.local(resp.AppendError(nil, errCrossSlot))
		return
	}
	if sk == splitMSet && len(args)%2 != 1 {
		s.local(resp.AppendError(nil, errWrongArgs("mset")))
		return
	}
	parts := splitParts(args, keys, sk)
	proto, login, nkeys := s.proto, s.login, len(keys)
	s.aside(func() []byte {
		s.p.cl.splits.Add(1)
		return s.p.runSplit(parts, sk, proto, login, nkeys)
	})
}

// part is one slot's share of a split command.
type part struct {
	slot uint16
	idx  []int // positions in the original key order
	cmd  [][]byte
}

// splitParts cuts a command into one part per slot, the parts' arguments
// copied (they outlive the client's read buffer).
func splitParts(args [][]byte, keys []keyspec.Key, sk splitKind) []*part {
	var parts []*part
	bySlot := map[uint16]*part{}
	for i, k := range keys {
		sl := cluster.Slot(args[k.Index])
		pt := bySlot[sl]
		if pt == nil {
			pt = &part{slot: sl, cmd: [][]byte{args[0]}}
			bySlot[sl] = pt
			parts = append(parts, pt)
		}
		pt.idx = append(pt.idx, i)
		pt.cmd = append(pt.cmd, bytes.Clone(args[k.Index]))
		if sk == splitMSet {
			pt.cmd = append(pt.cmd, bytes.Clone(args[k.Index+1]))
		}
	}
	for _, pt := range parts {
		pt.cmd[0] = bytes.Clone(pt.cmd[0])
	}
	return parts
}

// runSplit runs each slot's part on its primary and combines the replies.
// It waits for them: see aside, which calls it once every earlier reply of
// the session is in (its parts must not overtake earlier commands).
func (p *Proxy) runSplit(parts []*part, sk splitKind, proto int, login string, nkeys int) []byte {
	m := p.slotMap()
	if m == nil {
		return resp.AppendError(nil, errClusterNoMap(p.topologyErr()))
	}
	replies := make([][]byte, len(parts))
	for i, pt := range parts {
		addr, ok := m.Primary(pt.slot)
		if !ok {
			return resp.AppendError(nil, errClusterDown(pt.slot))
		}
		raw := resp.AppendCommand(nil, pt.cmd...)
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
	return combine(sk, parts, replies, nkeys)
}

// combine folds the parts' replies into the one the client gets: counts
// and OKs as a fan-out folds them (the first error among them is the
// reply when there is one), MGET's values back in the order of the keys.
func combine(sk splitKind, parts []*part, replies [][]byte, nkeys int) []byte {
	switch sk {
	case splitSum:
		return foldFan(fanSum, replies)
	case splitMSet:
		return foldFan(fanAllOK, replies)
	}
	for _, r := range replies {
		if len(r) > 0 && r[0] == '-' {
			return r
		}
	}
	vals := make([][]byte, nkeys)
	for i, r := range replies {
		els, ok := elements(r)
		if !ok || len(els) != len(parts[i].idx) {
			return r
		}
		for j, at := range parts[i].idx {
			vals[at] = els[j]
		}
	}
	return appendArray(nil, vals)
}

// appendArray appends an array of elements already encoded.
func appendArray(dst []byte, els [][]byte) []byte {
	dst = resp.AppendArrayHeader(dst, len(els))
	for _, el := range els {
		dst = append(dst, el...)
	}
	return dst
}

// elements splits an array reply into its elements' bytes, as they came.
func elements(r []byte) ([][]byte, bool) {
	if len(r) == 0 || r[0] != '*' {
		return nil, false
	}
	hdr := bytes.IndexByte(r, '\n') + 1
	n, err := strconv.Atoi(string(r[1 : hdr-2]))
	if err != nil || n < 0 {
		return nil, false
	}
	rest := r[hdr:]
	out := make([][]byte, 0, n)
	var f resp.Framer
	for range n {
		m, err := f.Frame(rest)
		if err != nil || m == 0 {
			return nil, false
		}
		out = append(out, rest[:m])
		rest = rest[m:]
	}
	return out, len(rest) == 0
}
