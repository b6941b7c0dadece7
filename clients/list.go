package clients

import (
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
)

// CLIENT ID, INFO, LIST and KILL answer about the proxy's own clients, in
// Valkey's format: a client's id is its session id, its fields are its own
// connection state (Snap), and CLIENT KILL closes sessions of the proxy.
// Valkey's view would be of the proxy's upstream connections, which serve
// many clients at once: killing one would cut every client on it, and its
// name, database and last command are another client's.

// A Client is one of the proxy's clients as CLIENT LIST and KILL see it:
// a session, behind a small adapter of the proxy's.
type Client interface {
	// Snap is the state the client published last (never nil).
	Snap() *Snap
	// Conn is its connection, read now.
	Conn() Conn
	// Abort closes it: CLIENT KILL of another client.
	Abort()
}

// Line is the client's line of CLIENT LIST (and CLIENT INFO's text).
func Line(b []byte, c Client, now time.Time) []byte {
	return AppendLine(b, c.Snap(), c.Conn(), now)
}

// List answers CLIENT LIST [TYPE type] [ID id ...] (args from LIST on)
// with the lines of the clients of all (in the order given) that match;
// errText is the error reply's text instead, when the filters are wrong.
func List(args [][]byte, all []Client, now time.Time) (text []byte, errText string) {
	var typ []byte
	var ids map[uint64]bool
	for i := 0; i < len(args); {
		switch {
		case resp.EqualFold(args[i], "type") && i+1 < len(args):
			if !validType(args[i+1]) {
				return nil, errClientType(string(args[i+1]))
			}
			typ = args[i+1]
			i += 2
		case resp.EqualFold(args[i], "id") && i+1 < len(args):
			ids = map[uint64]bool{}
			for i++; i < len(args); i++ {
				n, ok := valkeynum.String2ll(args[i])
				if !ok || n <= 0 {
					return nil, errClientID
				}
				ids[uint64(n)] = true
			}
		default:
			return nil, errSyntax
		}
	}
	var out []byte
	for _, x := range all {
		sn := x.Snap()
		if typ != nil && !sn.isType(typ) {
			continue
		}
		c := x.Conn()
		if ids != nil && !ids[c.ID] {
			continue
		}
		out = AppendLine(out, sn, c, now)
	}
	return out, ""
}
