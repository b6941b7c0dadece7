package clients

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
)

// Client ids in commands that Valkey acts on. A client's id is its session
// id (CLIENT ID, LIST), but CLIENT UNBLOCK names a client for Valkey to
// find among its connections: the id is translated to Valkey's id of that
// session's own connection (asked with CLIENT ID when the connection
// opened). A session without one, or an id no session has, becomes an id
// no Valkey client has, so Valkey answers as for a client that does not
// exist (0). CLIENT TRACKING ... REDIRECT names a client of the proxy too,
// but the proxy redirects to a relay connection of its own on each node
// (the proxy's tracking), so it is not translated here.
//
// CLIENT GETREDIR and CLIENT TRACKINGINFO's redirect answer with Valkey's
// id of the client invalidations go to, as does a tracking-redir-broken
// push: the proxy's id of that session is put in its place, or -1's and
// 0's meaning is kept.

// redirBroken is how Valkey's tracking-redir-broken push starts, before
// the id of the redirect target that is gone.
var redirBroken = []byte(">2\r\n$21\r\ntracking-redir-broken\r\n")

// noClient is a client id Valkey never gives (ids count up from 1).
const noClient = "9223372036854775807"

// ToValkeyIDs returns a CLIENT command with the client id it names for
// Valkey (CLIENT UNBLOCK's) translated by valkeyID, the Valkey id of the
// proxy's client id (0 when that client has no connection of its own, or
// there is no such client); cmd itself when it names none, or an id
// Valkey would refuse as such (its error then).
func ToValkeyIDs(cmd resp.Command, valkeyID func(id uint64) int64) resp.Command {
	const at = 2 // CLIENT UNBLOCK <id>
	if len(cmd.Args) < 3 || !resp.EqualFold(cmd.Args[1], "unblock") {
		return cmd
	}
	id, ok := valkeynum.String2ll(cmd.Args[at])
	if !ok || id <= 0 {
		return cmd
	}
	vid := noClient
	if v := valkeyID(uint64(id)); v > 0 {
		vid = strconv.FormatInt(v, 10)
	}
	args := append([][]byte(nil), cmd.Args...)
	args[at] = []byte(vid)
	return resp.Command{Args: args, Raw: resp.AppendCommand(nil, args...)}
}

const vidKeep = 4096

// IDs maps Valkey's ids of the sessions' own connections (and of the
// tracking relays) to the proxy's ids of their clients, for the last
// vidKeep connections: Valkey keeps a broken redirect's id. The zero value
// is empty and ready.
type IDs struct {
	mu    sync.Mutex
	ids   map[int64]uint64
	order []int64
}

// Add records that Valkey's id vid is the proxy's client id.
func (h *IDs) Add(vid int64, id uint64) {
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

// proxyID is the proxy's id of the client whose connection has (or had)
// Valkey's id vid; false when none of the last vidKeep did.
func (h *IDs) proxyID(vid int64) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[vid]
	return id, ok
}

// RedirHook is the reply hook for CLIENT <sub> (nil unless sub is
// GETREDIR or TRACKINGINFO): Valkey's id of the redirect target becomes
// the proxy's.
func (h *IDs) RedirHook(sub []byte) func([]byte) []byte {
	switch {
	case resp.EqualFold(sub, "getredir"):
		return func(reply []byte) []byte { return h.swap(reply, 0) }
	case resp.EqualFold(sub, "trackinginfo"):
		return func(reply []byte) []byte {
			i := bytes.Index(reply, []byte("$8\r\nredirect\r\n:"))
			if i < 0 {
				return reply
			}
			return h.swap(reply, i+len("$8\r\nredirect\r\n"))
		}
	}
	return nil
}

// Push is a push as the client gets it: a tracking-redir-broken push
// names the redirect target by the proxy's id.
func (h *IDs) Push(b []byte) []byte {
	if len(b) > len(redirBroken) && b[0] == '>' && bytes.HasPrefix(b, redirBroken) {
		return h.swap(b, len(redirBroken))
	}
	return b
}

// swap replaces the integer at reply[at:] (":<n>\r\n"), a Valkey client
// id, with the proxy's id of that client, when one of its sessions has it.
func (h *IDs) swap(reply []byte, at int) []byte {
	end := bytes.Index(reply[at:], []byte("\r\n"))
	if at >= len(reply) || reply[at] != ':' || end < 0 {
		return reply
	}
	end += at
	vid, ok := valkeynum.String2ll(reply[at+1 : end])
	if !ok || vid <= 0 {
		return reply
	}
	id, ok := h.proxyID(vid)
	if !ok {
		return reply
	}
	out := append([]byte(nil), reply[:at+1]...)
	out = strconv.AppendUint(out, id, 10)
	return append(out, reply[end:]...)
}

// HelloID is HELLO's reply with its id field set to the client's id, id
// (CLIENT ID's answer through the proxy), in place of Valkey's id of the
// connection the proxy sent HELLO on. The reply is a RESP2 array of
// field-value pairs or a RESP3 map; anything else (an error) and every
// other byte stay Valkey's.
func HelloID(reply []byte, id uint64) []byte {
	if len(reply) == 0 || (reply[0] != '*' && reply[0] != '%' && reply[0] != '|') {
		return reply
	}
	v, n, err := resp.Parse(reply)
	if err != nil || n != len(reply) || (v.Type != '*' && v.Type != '%') {
		return reply
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		k, val := v.Elems[i], &v.Elems[i+1]
		if (k.Type == '$' || k.Type == '+') && string(k.Str) == "id" && val.Type == ':' {
			if val.Int == int64(id) {
				return reply
			}
			val.Int = int64(id)
			return resp.AppendValue(nil, v)
		}
	}
	return reply
}
