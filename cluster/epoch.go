package cluster

import (
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/resp"
)

// InfoCommand is CLUSTER INFO, encoded: what MyEpoch reads the reply of.
var InfoCommand = resp.AppendCommandStrings(nil, "CLUSTER", "INFO")

// MyEpoch reads cluster_my_epoch, the node's config epoch, from its
// CLUSTER INFO reply.
func MyEpoch(b []byte) (int64, bool) {
	_, v, ok := strings.Cut(string(b), "cluster_my_epoch:")
	if !ok {
		return 0, false
	}
	v, _, _ = strings.Cut(v, "\r\n")
	e, err := strconv.ParseInt(v, 10, 64)
	return e, err == nil
}

// TopEpoch is the highest config epoch in infos (CLUSTER INFO replies),
// or, with infos nil, asked of the nodes (in protocol proto, logged in as
// login); -1 when none answers. The proxy raises its epoch clue above it
// around a flush, which deletes every node's counters.
func (v *View) TopEpoch(nodes []string, proto int, login string, infos [][]byte) int64 {
	if infos == nil {
		for _, addr := range nodes {
			if r, err := v.host.Do(addr, proto, login, InfoCommand); err == nil {
				infos = append(infos, r[0])
			}
		}
	}
	top := int64(-1)
	for _, b := range infos {
		if e, ok := MyEpoch(b); ok {
			top = max(top, e)
		} else {
			v.host.Log.Warn("cannot learn a cluster node's config epoch around a flush", "reply", string(b))
		}
	}
	return top
}
