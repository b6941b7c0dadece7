package admin

import (
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/redis/go-redis/v9"
)

// The admin commands that read lock state from Valkey (LOCKPROXY LOCKS,
// STATS, SESSIONS, REINDEX, FENCE) ask the server that has it: the one
// upstream through the host's side client, or in a cluster the primary of
// each lock's slot.

// server is a server that holds lock records, and the locks' indexes
// there (rewrite/index.go): the one of a Valkey that is not a cluster, or
// those of the slots a primary serves, lowest slot first.
type server struct {
	c       *redis.Client
	indexes []string
	cluster bool
}

// servers are the servers that hold lock records: the side client, or
// every primary of the cluster. done closes what was opened for the call.
func (a *Admin) servers() (servers []server, done func()) {
	m := a.h.Map()
	if m == nil {
		return []server{{c: a.h.Side(), indexes: []string{rewrite.StandaloneIndexKey}}}, func() {}
	}
	for _, sv := range m.Served() {
		ls := server{c: a.h.NodeClient(sv.Primary), cluster: true}
		for _, slot := range sv.Slots {
			ls.indexes = append(ls.indexes, rewrite.SlotIndexKey(slot))
		}
		servers = append(servers, ls)
	}
	return servers, func() {
		for _, s := range servers {
			s.c.Close()
		}
	}
}
