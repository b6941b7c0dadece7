package clients

import "github.com/lockproxy/lockproxy/resp"

// Snap is what CLIENT LIST shows of a client's connection state, and
// other clients may read: the client publishes a new one whenever its
// state may have changed (it is never changed once published).
type Snap struct {
	DB, Proto       int
	Name            string
	LibName, LibVer string
	User            string
	Flags           string // see Flags
	Multi           int    // commands queued in a transaction, -1 outside one
	Sub, PSub, SSub int    // subscriptions: channels, patterns, shard channels
	Replica         bool   // SYNC or PSYNC made it a replica
}

// FlagState is the connection state CLIENT LIST's flags show.
type FlagState struct {
	Replica, Monitor, PubSub, Multi bool
	NoEvict, NoTouch                bool
}

// Flags is CLIENT LIST's flags for f, in Valkey's order: S (replica), O
// (monitor), P (subscribed), x (in a transaction), e (no-evict), T
// (no-touch); N when none is set. Blocked (b) is added when the line is
// written (AppendFlags).
func Flags(f FlagState) string {
	var b []byte
	if f.Replica {
		b = append(b, 'S')
	}
	if f.Monitor {
		b = append(b, 'O')
	}
	if f.PubSub {
		b = append(b, 'P')
	}
	if f.Multi {
		b = append(b, 'x')
	}
	if f.NoEvict {
		b = append(b, 'e')
	}
	if f.NoTouch {
		b = append(b, 'T')
	}
	if len(b) == 0 {
		return "N"
	}
	return string(b)
}

// Type is the client's type for CLIENT LIST TYPE and CLIENT KILL TYPE.
func (sn *Snap) Type() string {
	switch {
	case sn.Replica:
		return "replica"
	case sn.Sub+sn.PSub+sn.SSub > 0:
		return "pubsub"
	}
	return "normal"
}

// validType reports whether Valkey knows t as a client type.
func validType(t []byte) bool {
	for _, k := range []string{"normal", "master", "primary", "replica", "slave", "pubsub"} {
		if resp.EqualFold(t, k) {
			return true
		}
	}
	return false
}

// isType reports whether the client is of type t (slave is replica).
func (sn *Snap) isType(t []byte) bool {
	switch ct := sn.Type(); {
	case resp.EqualFold(t, ct):
		return true
	case ct == "replica":
		return resp.EqualFold(t, "slave")
	}
	return false
}
