package cluster

import "bytes"

// How a command whose keys span slots is answered, by its family in the
// proxy's command table: split into one command per slot and the replies
// combined, as Envoy's redis_proxy does. Every other command gets Valkey's
// own CROSSSLOT (the proxy's to send).
type SplitKind uint8

const (
	SplitNone SplitKind = iota
	SplitSum            // DEL, UNLINK, EXISTS, TOUCH: the integer replies added up
	SplitMGet           // MGET: the values put back in the order of the keys
	SplitMSet           // MSET: +OK when every part is; not atomic across slots
)

// Part is one slot's share of a split command.
type Part struct {
	Slot uint16
	Idx  []int    // the part's keys' positions in the command's key order
	Cmd  [][]byte // the part's command: the name, then its keys (and MSET's values)
}

// Split cuts a command into one part per slot, in the order each slot's
// first key comes. at is where the command's keys are in args (MSET: each
// key's value follows it). The parts' arguments are copies: they outlive
// the client's read buffer.
func Split(args [][]byte, at []int, k SplitKind) []*Part {
	var parts []*Part
	bySlot := map[uint16]*Part{}
	for i, a := range at {
		sl := Slot(args[a])
		pt := bySlot[sl]
		if pt == nil {
			pt = &Part{Slot: sl, Cmd: [][]byte{args[0]}}
			bySlot[sl] = pt
			parts = append(parts, pt)
		}
		pt.Idx = append(pt.Idx, i)
		pt.Cmd = append(pt.Cmd, bytes.Clone(args[a]))
		if k == SplitMSet {
			pt.Cmd = append(pt.Cmd, bytes.Clone(args[a+1]))
		}
	}
	for _, pt := range parts {
		pt.Cmd[0] = bytes.Clone(pt.Cmd[0])
	}
	return parts
}

// Combine folds the parts' replies (replies[i] is parts[i]'s) into the one
// the client gets: counts and OKs as a fan-out folds them (the first error
// among them is the reply when there is one), MGET's values back in the
// order of the nkeys keys.
func Combine(k SplitKind, parts []*Part, replies [][]byte, nkeys int) []byte {
	switch k {
	case SplitSum:
		return Fold(FoldSum, replies)
	case SplitMSet:
		return Fold(FoldAllOK, replies)
	}
	for _, r := range replies {
		if isError(r) {
			return r
		}
	}
	vals := make([][]byte, nkeys)
	for i, r := range replies {
		els, ok := Elements(r)
		if !ok || len(els) != len(parts[i].Idx) {
			return r
		}
		for j, at := range parts[i].Idx {
			vals[at] = els[j]
		}
	}
	return AppendArray(nil, vals)
}
