package admin

import (
	"strings"

	"github.com/lockproxy/lockproxy/resp"
)

// STATS: the counter table's lines, and locks_held.
func (a *Admin) stats(c Conn, _ [][]byte) []byte {
	// locks_held is Valkey's: the locks of this database whose key still
	// holds a recorded grant, whichever instance granted them (read from
	// the locks' index, a round trip per 256 locks: STATS only, not INFO
	// or /metrics, which monitoring polls).
	var held any = "unknown"
	if locks, err := a.readLocks(c.DB(), nil); err == nil {
		n := int64(0)
		for i := range locks {
			if locks[i].current {
				n++
			}
		}
		held = n
	}
	lines := a.h.Stats()
	f := make([]Field, len(lines), len(lines)+1)
	for i, l := range lines {
		f[i] = Field{l.Name, l.Value}
	}
	return Encode(nil, append(f, Field{"locks_held", held}), c.Proto())
}

// CONFIG: the configuration in force, secrets redacted.
func (a *Admin) config(c Conn, _ [][]byte) []byte {
	f := []Field{{"config_file", a.o.ConfigFile}}
	f = append(f, ConfigFields(a.Running.Effective(a.o.LogLevelLive), true)...)
	if r := a.Running.PendingRestart(); len(r) > 0 {
		f = append(f, Field{"pending_restart", strings.Join(r, " ")})
	}
	return Encode(nil, f, c.Proto())
}

// RELOAD: the host's Reload, and what it did.
func (a *Admin) reload(c Conn, _ [][]byte) []byte {
	res, err := a.h.Reload()
	if err != nil {
		return resp.AppendError(nil, errReload(err))
	}
	return Encode(nil, []Field{
		{"status", "reloaded"},
		{"file", res.File},
		{"lock_rules", int64(res.Rules)},
		{"restart_needed", strings.Join(res.Restart, " ")},
	}, c.Proto())
}
