package cluster

import (
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// SCAN in front of a cluster walks every primary in turn: the cursor the
// client sees carries the primary's place in the map's sorted list of
// primaries in its low 8 bits and that node's own cursor above them. When a
// node's scan ends (cursor 0) the next primary's begins; 0 after the last
// ends the whole scan. SCAN's guarantees (every key present throughout is
// returned) hold while the set of primaries stays the same; a failover or
// resharding in the middle of a scan can repeat or miss keys that moved.

const scanNodeBits = 8

// ScanCursor reads the client's cursor: idx is the place of the primary to
// ask among primaries, node the cursor to send it. ok is false when the
// cursor names no primary (made up, or from before the cluster lost
// primaries).
func ScanCursor(cursor uint64, primaries int) (idx int, node uint64, ok bool) {
	idx = int(cursor & (1<<scanNodeBits - 1))
	if idx >= primaries {
		return 0, 0, false
	}
	return idx, cursor >> scanNodeBits, true
}

// ScanReply puts the node's place idx into the cursor of its SCAN reply;
// more says whether a primary comes after it. ok is false when the node's
// cursor is too large to carry the place; a reply that is not SCAN's (an
// error) is returned as it is.
func ScanReply(reply []byte, idx int, more bool) (out []byte, ok bool) {
	els, isArray := Elements(reply)
	if !isArray || len(els) != 2 {
		return reply, true // an error, as it is
	}
	v, _, err := resp.Parse(els[0])
	if err != nil {
		return reply, true
	}
	nc, err := strconv.ParseUint(string(v.Str), 10, 64)
	if err != nil {
		return reply, true
	}
	var next uint64
	switch {
	case nc != 0 && nc>>(64-scanNodeBits) != 0:
		return nil, false
	case nc != 0:
		next = nc<<scanNodeBits | uint64(idx)
	case more:
		next = uint64(idx + 1) // the next primary, from its start
	}
	return AppendArray(nil, [][]byte{resp.AppendBulk(nil, strconv.AppendUint(nil, next, 10)), els[1]}), true
}
