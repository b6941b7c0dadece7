package proxy

import (
	"strconv"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
)

// Client ids in commands that Valkey acts on. A client's id is its session
// id (CLIENT ID, LIST), but CLIENT UNBLOCK and CLIENT TRACKING ... REDIRECT
// name a client for Valkey to find among its connections: the id is
// translated to Valkey's id of that session's own connection (asked with
// CLIENT ID when the connection opened). A session without one, or an id
// no session has, becomes an id no Valkey client has, so Valkey answers as
// for a client that does not exist (UNBLOCK: 0; REDIRECT: its error).

// noClient is a client id Valkey never gives (ids count up from 1).
const noClient = "9223372036854775807"

// clientIDArg is the position of the argument of cmd that names a client by
// id for Valkey, 0 when none does.
func clientIDArg(args [][]byte) int {
	if len(args) < 3 || !resp.EqualFold(args[0], "client") {
		return 0
	}
	if resp.EqualFold(args[1], "unblock") {
		return 2
	}
	if resp.EqualFold(args[1], "tracking") {
		for i := 3; i+1 < len(args); i++ {
			if resp.EqualFold(args[i], "redirect") {
				return i + 1
			}
		}
	}
	return 0
}

// toValkeyIDs returns cmd with the client id it names translated to
// Valkey's; cmd itself when it names none, or an id Valkey would refuse
// as such (its error then).
func (s *session) toValkeyIDs(cmd resp.Command) resp.Command {
	i := clientIDArg(cmd.Args)
	if i == 0 {
		return cmd
	}
	id, ok := valkeynum.String2ll(cmd.Args[i])
	if !ok || id <= 0 {
		return cmd
	}
	vid := noClient
	for _, x := range s.p.allSessions() {
		if x.id == uint64(id) {
			if c := x.dedicated(); c != nil && c.vid > 0 {
				vid = strconv.FormatInt(c.vid, 10)
			}
			break
		}
	}
	args := append([][]byte(nil), cmd.Args...)
	args[i] = []byte(vid)
	return resp.Command{Args: args, Raw: resp.AppendCommand(nil, args...)}
}
