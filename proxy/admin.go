package proxy

import "github.com/lockproxy/lockproxy/resp"

// admin answers the LOCKPROXY command family from the proxy itself.
// (Placeholder: the audit issue fills it in.)
func (s *session) admin(cmd resp.Command) {
	s.local(resp.AppendError(nil, "ERR unknown LOCKPROXY subcommand; try LOCKPROXY HELP"))
}

// info answers INFO lockproxy and reports true; any other INFO is left to
// Valkey (false).
func (s *session) info(cmd resp.Command) bool { return false }
