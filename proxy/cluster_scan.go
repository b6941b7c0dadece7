package proxy

import (
	"strconv"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
)

// SCAN in front of a cluster walks every primary in turn, its cursor
// carrying the primary's place (cluster.ScanCursor, cluster.ScanReply).

// scan routes a SCAN to the primary its cursor names and rewrites the
// cursors both ways. It reports whether it answered the client.
func (s *session) scan(cmd resp.Command) bool {
	args := cmd.Args
	if len(args) < 2 {
		return false // Valkey's arity error
	}
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	m := s.p.cl.Map()
	switch {
	case err != nil:
		return false // Valkey's "invalid cursor"
	case m == nil || len(m.Primaries) == 0:
		s.local(s.p.cl.NoMap())
		return true
	}
	idx, nodeCur, ok := cluster.ScanCursor(cur, len(m.Primaries))
	if !ok {
		s.local(resp.AppendError(nil, errClusterScanCursor))
		return true
	}
	s.node = m.Primaries[idx]
	if s.dialFirst() {
		return true // handled again once the node's connection is open
	}
	out := make([][]byte, len(args))
	copy(out, args)
	out[1] = strconv.AppendUint(nil, nodeCur, 10)
	more := idx+1 < len(m.Primaries)
	s.forward(resp.AppendCommand(nil, out...), func(reply []byte) []byte {
		out, ok := cluster.ScanReply(reply, idx, more)
		if !ok {
			return resp.AppendError(nil, errClusterScanCursor)
		}
		return out
	})
	return true
}
