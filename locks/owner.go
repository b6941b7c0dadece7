package locks

import "github.com/lockproxy/lockproxy/policy"

// Owner is who a client is under rule r's session scope: its name
// (client_name; its connection when it has none), its host (client_addr),
// its ACL user (user: userOwner, made once per login by UserOwner), or its
// connection (connOwner). The same client name, host or user is the same
// owner on every lockproxy instance in front of one Valkey; a connection
// owner names this instance too.
func Owner(r *policy.Rule, name, host, connOwner, userOwner string) string {
	switch r.Session {
	case policy.SessionClientName:
		if name != "" {
			return "name:" + name
		}
	case policy.SessionClientAddr:
		return "addr:" + host
	case policy.SessionUser:
		return userOwner
	}
	return connOwner
}

// UserOwner is the owner identity of ACL user under session: user.
func UserOwner(user string) string { return "user:" + user }

// DefaultUser is the user of a client that has not logged in through
// lockproxy, under session: user: Valkey's own name for it.
const DefaultUser = "default"
