package proxy

import (
	"bytes"

	"github.com/lockproxy/lockproxy/resp"
)

// In front of a cluster, INFO's Keyspace section counts the whole
// keyspace: the same INFO goes to every primary, the other sections are
// one node's (the one the session's keyless commands go to), and the db
// lines are summed (cluster.SumKeyspace). A session on a connection of its
// own (MULTI, WATCH, ...) gets its node's INFO as it is.

// clusterInfo answers INFO (its sections in rest, "INFO" first) with the
// Keyspace section summed over the primaries, and the lockproxy section
// after them when mine. It waits for the replies, after every reply the
// session is owed, as fanOut does.
func (s *session) clusterInfo(rest [][]byte, mine bool) {
	m := s.p.cl.Map()
	if m == nil || len(m.Primaries) == 0 {
		s.local(s.p.cl.NoMap())
		return
	}
	if !s.settle() {
		return
	}
	out, ok := s.p.cl.SumInfo(m, resp.AppendCommand(nil, rest...), s.proto, s.login, s.node)
	if !ok {
		s.local(out) // a node not reached, or its error as it is
		return
	}
	if mine {
		out = append(append(bytes.TrimRight(out, "\r\n"), "\r\n\r\n"...), s.p.infoSection()...)
	}
	s.local(resp.AppendText(nil, out, s.proto))
}
