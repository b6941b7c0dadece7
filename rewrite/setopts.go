package rewrite

import (
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// setOpts is what SET's options say that the decision needs, parsed the way
// Valkey does (any case, any order). ok is false for anything Valkey would
// reject: such a SET is forwarded unchanged and Valkey answers the syntax
// error itself. The lease is not kept: the scripts read the lock's PTTL
// once SET has run, so every expiry form counts the same.
type setOpts struct {
	nx, xx, get bool
	ok          bool
}

func parseSet(args [][]byte) setOpts {
	var o setOpts
	if len(args) < 3 {
		return o
	}
	expiry := false
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case resp.EqualFold(a, "nx") && !o.xx:
			o.nx = true
		case resp.EqualFold(a, "xx") && !o.nx:
			o.xx = true
		case resp.EqualFold(a, "get"):
			o.get = true
		case resp.EqualFold(a, "keepttl") && !expiry:
			expiry = true
		case (resp.EqualFold(a, "px") || resp.EqualFold(a, "ex") || resp.EqualFold(a, "pxat") || resp.EqualFold(a, "exat")) && !expiry && i+1 < len(args):
			if n, err := strconv.ParseInt(string(args[i+1]), 10, 64); err != nil || n <= 0 {
				return o
			}
			expiry = true
			i++
		default:
			return o
		}
	}
	o.ok = true
	return o
}
