package rewrite

import (
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
		case equalFold(a, "nx") && !o.xx:
			o.nx = true
		case equalFold(a, "xx") && !o.nx:
			o.xx = true
		case equalFold(a, "get"):
			o.get = true
		case equalFold(a, "keepttl") && !expiry:
			o.keepTTL, expiry = true, true
		case (equalFold(a, "px") || equalFold(a, "ex") || equalFold(a, "pxat") || equalFold(a, "exat")) && !expiry && i+1 < len(args):
			n, err := strconv.ParseInt(string(args[i+1]), 10, 64)
			if err != nil || n <= 0 {
				return o
			}
			switch {
			case equalFold(a, "px"):
				o.lease = time.Duration(n) * time.Millisecond
			case equalFold(a, "ex"):
				o.lease = time.Duration(n) * time.Second
			case equalFold(a, "pxat"):
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

// equalFold reports whether b equals the lower-case ASCII word s in any case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
