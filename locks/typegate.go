package locks

import (
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// TypeGateCommand is the EVAL of rewrite.TypeGate for a refused command
// that works on one data type (LPOP, HDEL, ...): keys and the types it
// cannot work on (rewrite.Decider.TypeCheck). Valkey answers WRONGTYPE,
// as it would, when a key holds such a type, and TypeGateRefused
// otherwise.
func TypeGateCommand(keys [][]byte, types []string) []byte {
	args := make([][]byte, 0, 4+len(keys)+len(types))
	args = append(args, []byte("EVAL"), []byte(rewrite.TypeGate), strconv.AppendInt(nil, int64(len(keys)), 10))
	args = append(args, keys...)
	args = append(args, []byte(rewrite.TypeGateRefused))
	for _, t := range types {
		args = append(args, []byte(t))
	}
	return resp.AppendCommand(nil, args...)
}
