package proxy

import (
	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/resp"
)

// Client ids in commands Valkey acts on are translated both ways by
// package clients: the proxy's id of a session to Valkey's id of its own
// connection (toValkeyIDs) and back (p.vids, filled as own connections and
// tracking relays open).

// toValkeyIDs returns cmd with the client id it names for Valkey
// translated to Valkey's (clients.ToValkeyIDs).
func (s *session) toValkeyIDs(cmd resp.Command) resp.Command {
	if idOf(cmd.Args[0]) != cClient {
		return cmd
	}
	return clients.ToValkeyIDs(cmd, s.p.valkeyID)
}

// valkeyID is Valkey's id of the own connection of the session with id,
// 0 when it has none or there is no such session.
func (p *Proxy) valkeyID(id uint64) int64 {
	for _, x := range p.allSessions() {
		if x.id == id {
			if c := x.dedicated(); c != nil {
				return c.ValkeyID()
			}
			return 0
		}
	}
	return 0
}

// redirHook is the reply hook for CLIENT GETREDIR and CLIENT TRACKINGINFO
// (nil for any other command): Valkey's id of the redirect target becomes
// the proxy's.
func (s *session) redirHook(args [][]byte) func([]byte) []byte {
	if len(args) != 2 || idOf(args[0]) != cClient {
		return nil
	}
	return s.p.vids.RedirHook(args[1])
}
