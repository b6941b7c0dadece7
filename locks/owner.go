package locks

import "github.com/lockproxy/lockproxy/policy"

// Owner is who a client is under rule r's session scope: its name
// (client_name; its connection when it has none), its host (client_addr),
// or its connection (connOwner). The same client name, or host, is the
// same owner on every lockproxy instance in front of one Valkey; a
// connection owner names this instance too.
func Owner(r *policy.Rule, name, host, connOwner string) string {
	switch r.Session {
	case policy.SessionClientName:
		if name != "" {
			return "name:" + name
		}
	case policy.SessionClientAddr:
		return "addr:" + host
	}
	return connOwner
}
