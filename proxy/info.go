package proxy

import (
	"bytes"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
)

// info answers INFO lockproxy. INFO naming lockproxy among other sections
// gets Valkey's sections with the lockproxy section after them; any other
// INFO goes to Valkey unchanged. It reports false only on a dedicated
// connection, where the usual path forwards the command (inside MULTI too).
func (s *session) info(cmd resp.Command) bool {
	args := cmd.Args
	if s.ded != nil && s.inMulti {
		return false
	}
	mine := false
	rest := [][]byte{args[0]}
	for _, a := range args[1:] {
		if resp.EqualFold(a, "lockproxy") {
			mine = true
		} else {
			rest = append(rest, a)
		}
	}
	if s.p.cl != nil && s.ded == nil && !(mine && len(rest) == 1) && cluster.WantsKeyspace(rest[1:]) {
		if msg := s.infoDenied(); mine && msg != "" {
			s.local(resp.AppendError(nil, msg))
			return true
		}
		s.clusterInfo(rest, mine) // the Keyspace section summed over the primaries
		return true
	}
	if !mine {
		if s.ded != nil {
			return false
		}
		// handle routes only commands.Forward commands on shared connections.
		s.forwardReady(cmd.Raw)
		return true
	}
	// With admin users set, the section is theirs to read, as STATS is.
	if msg := s.infoDenied(); msg != "" {
		s.local(resp.AppendError(nil, msg))
		return true
	}
	if len(rest) == 1 {
		if !s.settle() {
			return true
		}
		s.local(resp.AppendText(nil, s.p.infoSection(), s.proto))
		return true
	}
	if s.connFirst(s.key()) {
		return true // handled again once its connection is dialled
	}
	p := s.p
	proto := s.proto
	s.forward(resp.AppendCommand(nil, rest...), func(reply []byte) []byte {
		v, n, err := resp.Parse(reply)
		if err != nil || n != len(reply) || (v.Type != '$' && v.Type != '=') || v.Null {
			return reply // an error, from Valkey: as it is
		}
		text := v.Str
		if v.Type == '=' && len(text) >= 4 {
			text = text[4:]
		}
		text = append(bytes.TrimRight(text, "\r\n"), "\r\n\r\n"...)
		return resp.AppendText(nil, append(text, p.infoSection()...), proto)
	})
	return true
}

// infoDenied is the error for INFO lockproxy on this connection, or ""
// (package admin decides).
func (s *session) infoDenied() string { return s.p.ops.admin.InfoDenied(s.id) }
