package proxy

import (
	"bytes"
	"strconv"
	"sync"

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

// CLIENT GETREDIR and CLIENT TRACKINGINFO's redirect answer with Valkey's
// id of the client invalidations go to: the proxy's id of that session is
// put in its place (fromValkeyID), or -1's and 0's meaning is kept.

// redirBroken is how Valkey's tracking-redir-broken push starts, before
// the id of the redirect target that is gone.
var redirBroken = []byte(">2\r\n$21\r\ntracking-redir-broken\r\n")

// noClient is a client id Valkey never gives (ids count up from 1).
const noClient = "9223372036854775807"

// clientIDArg is the position of the argument of cmd that names a client by
// id for Valkey, 0 when none does.
func clientIDArg(args [][]byte) int {
	if len(args) < 3 || idOf(args[0]) != cClient {
		return 0
	}
	if resp.EqualFold(args[1], "unblock") {
		return 2
	}
	// CLIENT TRACKING ... REDIRECT names a client of the proxy: tracking.go
	// redirects to a relay connection of the proxy's on each node.
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
			if c := x.dedicated(); c != nil && c.ValkeyID() > 0 {
				vid = strconv.FormatInt(c.ValkeyID(), 10)
			}
			break
		}
	}
	args := append([][]byte(nil), cmd.Args...)
	args[i] = []byte(vid)
	return resp.Command{Args: args, Raw: resp.AppendCommand(nil, args...)}
}

// proxyID is the proxy's id of the session whose own connection has (or
// had: Valkey keeps a broken redirect's id) Valkey's id vid; false when none
// of the last vidKeep did.
func (p *Proxy) proxyID(vid int64) (uint64, bool) {
	p.vids.mu.Lock()
	defer p.vids.mu.Unlock()
	id, ok := p.vids.ids[vid]
	return id, ok
}

const vidKeep = 4096

// vidHistory maps Valkey's ids of the sessions' own connections to the
// sessions' ids, for the last vidKeep connections.
type vidHistory struct {
	mu    sync.Mutex
	ids   map[int64]uint64
	order []int64
}

func (h *vidHistory) add(vid int64, id uint64) {
	if vid <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ids == nil {
		h.ids = map[int64]uint64{}
	}
	if len(h.order) == vidKeep {
		delete(h.ids, h.order[0])
		h.order = append(h.order[:0], h.order[1:]...)
	}
	h.ids[vid] = id
	h.order = append(h.order, vid)
}

// redirHook is the reply hook for CLIENT GETREDIR and CLIENT TRACKINGINFO
// (nil for any other command): Valkey's id of the redirect target becomes
// the proxy's.
func (s *session) redirHook(args [][]byte) func([]byte) []byte {
	if len(args) != 2 || idOf(args[0]) != cClient {
		return nil
	}
	switch {
	case resp.EqualFold(args[1], "getredir"):
		return func(reply []byte) []byte { return s.p.swapID(reply, 0) }
	case resp.EqualFold(args[1], "trackinginfo"):
		return func(reply []byte) []byte {
			i := bytes.Index(reply, []byte("$8\r\nredirect\r\n:"))
			if i < 0 {
				return reply
			}
			return s.p.swapID(reply, i+len("$8\r\nredirect\r\n"))
		}
	}
	return nil
}

// swapID replaces the integer at reply[at:] (":<n>\r\n"), a Valkey client
// id, with the proxy's id of that client, when one of its sessions has it.
func (p *Proxy) swapID(reply []byte, at int) []byte {
	end := bytes.Index(reply[at:], []byte("\r\n"))
	if at >= len(reply) || reply[at] != ':' || end < 0 {
		return reply
	}
	end += at
	vid, ok := valkeynum.String2ll(reply[at+1 : end])
	if !ok || vid <= 0 {
		return reply
	}
	id, ok := p.proxyID(vid)
	if !ok {
		return reply
	}
	out := append([]byte(nil), reply[:at+1]...)
	out = strconv.AppendUint(out, id, 10)
	return append(out, reply[end:]...)
}
