package proxy

import (
	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/resp"
)

// Client ids in commands Valkey acts on are translated both ways by
// package clients: the proxy's id of a session to Valkey's id of its own
// connection (toValkeyIDs) and back (p.vids, filled as own connections and
// tracking relays open).

// toValkeyIDs returns cmd with the client id it names for Valkey
// translated to Valkey's (clients.ToValkeyIDs).
func (s *session) toValkeyIDs(cmd resp.Command) resp.Command {
	if commands.IDOf(cmd.Args[0]) != commands.IDClient {
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

// helloHook is the reply hook of HELLO: its id field is the session's id,
// as CLIENT ID answers it (clientSelf), not Valkey's id of the connection
// HELLO went on (clients.HelloID).
func (s *session) helloHook() func([]byte) []byte {
	id := s.id
	return func(reply []byte) []byte { return clients.HelloID(reply, id) }
}

// redirHook is the reply hook for CLIENT GETREDIR and CLIENT TRACKINGINFO
// (nil for any other command): Valkey's id of the redirect target becomes
// the proxy's.
func (s *session) redirHook(args [][]byte) func([]byte) []byte {
	if len(args) != 2 || commands.IDOf(args[0]) != commands.IDClient {
		return nil
	}
	return s.p.vids.RedirHook(args[1])
}
