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
