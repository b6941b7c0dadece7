package proxy

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

// scan routes a SCAN to the primary its cursor names and rewrites the
// cursors both ways. It reports whether it answered the client.
func (s *session) scan(cmd resp.Command) bool {
	args := cmd.Args
	if len(args) < 2 {
		return false // Valkey's arity error
	}
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	m := s.p.slotMap()
	switch {
	case err != nil:
		return false // Valkey's "invalid cursor"
	case m == nil || len(m.Primaries) == 0:
		s.local(resp.AppendError(nil, errClusterNoMap(s.p.topologyErr())))
		return true
	}
	idx := int(cur & (1<<scanNodeBits - 1))
	if idx >= len(m.Primaries) {
		s.local(resp.AppendError(nil, errClusterScanCursor))
		return true
	}
	s.node = m.Primaries[idx]
	if s.dialFirst() {
		return true // handled again once the node's connection is open
	}
	out := make([][]byte, len(args))
	copy(out, args)
	out[1] = strconv.AppendUint(nil, cur>>scanNodeBits, 10)
	more := idx+1 < len(m.Primaries)
	s.forward(resp.AppendCommand(nil, out...), func(reply []byte) []byte {
		return scanReply(reply, idx, more)
	})
	return true
}

// scanReply puts the node's place into the cursor of its SCAN reply.
func scanReply(reply []byte, idx int, more bool) []byte {
	els, ok := elements(reply)
	if !ok || len(els) != 2 {
		return reply // an error, as it is
	}
	v, _, err := resp.Parse(els[0])
	if err != nil {
		return reply
	}
	nc, err := strconv.ParseUint(string(v.Str), 10, 64)
	if err != nil {
		return reply
	}
	var next uint64
	switch {
	case nc != 0 && nc>>(64-scanNodeBits) != 0:
		return resp.AppendError(nil, errClusterScanCursor)
	case nc != 0:
		next = nc<<scanNodeBits | uint64(idx)
	case more:
		next = uint64(idx + 1) // the next primary, from its start
	}
	return appendArray(nil, [][]byte{resp.AppendBulk(nil, strconv.AppendUint(nil, next, 10)), els[1]})
}
