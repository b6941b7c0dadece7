package rewrite

import (
	"github.com/lockproxy/lockproxy/resp"
	"strconv"
	"time"
)

// setOpts is what SET's options say, parsed the way Valkey does (any case,
// any order). ok is false for anything Valkey would reject: such a SET is
// forwarded unchanged and Valkey answers the syntax error itself.
type setOpts struct {
	nx, xx, get, keepTTL bool
	lease                time.Duration // PX/EX: relative lease
	at                   time.Time     // PXAT/EXAT: absolute expiry
	ok                   bool
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
			o.keepTTL, expiry = true, true
		case (resp.EqualFold(a, "px") || resp.EqualFold(a, "ex") || resp.EqualFold(a, "pxat") || resp.EqualFold(a, "exat")) && !expiry && i+1 < len(args):
			n, err := strconv.ParseInt(string(args[i+1]), 10, 64)
			if err != nil || n <= 0 {
				return o
			}
			switch {
			case resp.EqualFold(a, "px"):
				o.lease = time.Duration(n) * time.Millisecond
			case resp.EqualFold(a, "ex"):
				o.lease = time.Duration(n) * time.Second
			case resp.EqualFold(a, "pxat"):
				o.at = time.UnixMilli(n)
			default:
				o.at = time.Unix(n, 0)
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
