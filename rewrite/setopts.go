package rewrite

import (
	"bytes"
	"math"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
)

// setOpts is what SET's (or GETEX's) options say, read as Valkey 8.0.1's
// parseExtendedStringArgumentsOrReply (t_string.c) reads them:
//
//   - any letter case, any order;
//   - NX and XX exclude each other; each, and GET, may repeat (SET only);
//   - KEEPTTL (SET only) and PERSIST (GETEX only) may repeat, and exclude
//     every expiry option;
//   - EX, PX, EXAT and PXAT take the next argument whatever it is, may
//     repeat (the last one's value is the one Valkey uses; the others are
//     never read), but exclude each other;
//   - an option is compared as a C string, up to its first NUL byte
//     ("NX\x00junk" is NX);
//   - anything else is a syntax error.
//
// ok is false for a syntax error: Valkey refuses the command and writes
// nothing. exp is the index in args of the last expiry option (0: none);
// expOK whether its value is one Valkey takes (an integer as string2ll
// reads it, above 0, and for EX and EXAT one that stays an int64 in ms;
// a relative expiry that overflows once Valkey adds its clock is left to
// Valkey: the scripts run the command and answer its error). nul is set
// when an option word holds a NUL byte: lockproxy's scripts read options
// as whole strings, so such a command on a lock key is refused
// (errUnsupported). TestSetGrammarMatchesValkey compares ok with a real
// valkey-server over generated option lists.
type setOpts struct {
	nx, xx, get, keepttl, persist bool
	exp                           int
	expOK                         bool
	ok                            bool
	nul                           bool
}

// Expiry options, as a bit set (which one was seen).
const (
	optEX = 1 << iota
	optPX
	optEXAT
	optPXAT
)

func parseSet(args [][]byte) setOpts { return parseStringOpts(args, true) }

func parseGetex(args [][]byte) setOpts { return parseStringOpts(args, false) }

func parseStringOpts(args [][]byte, set bool) setOpts {
	var o setOpts
	first := 2
	if set {
		first = 3
	}
	if len(args) < first {
		return o
	}
	seen := 0 // the expiry options seen
	for j := first; j < len(args); j++ {
		a := args[j]
		if i := bytes.IndexByte(a, 0); i >= 0 {
			a = a[:i]
			o.nul = true
		}
		// An expiry option takes the next argument, and excludes the three
		// others, KEEPTTL and PERSIST (a repeat of itself is allowed).
		canExpire := j+1 < len(args) && !o.keepttl && !o.persist
		switch {
		case set && resp.EqualFold(a, "nx") && !o.xx:
			o.nx = true
		case set && resp.EqualFold(a, "xx") && !o.nx:
			o.xx = true
		case set && resp.EqualFold(a, "get"):
			o.get = true
		case set && resp.EqualFold(a, "keepttl") && !o.persist && seen == 0:
			o.keepttl = true
		case !set && resp.EqualFold(a, "persist") && seen == 0 && !o.keepttl:
			o.persist = true
		case resp.EqualFold(a, "ex") && canExpire && seen&^optEX == 0:
			seen |= optEX
			o.exp = j
			j++
		case resp.EqualFold(a, "px") && canExpire && seen&^optPX == 0:
			seen |= optPX
			o.exp = j
			j++
		case resp.EqualFold(a, "exat") && canExpire && seen&^optEXAT == 0:
			seen |= optEXAT
			o.exp = j
			j++
		case resp.EqualFold(a, "pxat") && canExpire && seen&^optPXAT == 0:
			seen |= optPXAT
			o.exp = j
			j++
		default:
			return setOpts{nul: o.nul}
		}
	}
	o.ok = true
	if o.exp > 0 {
		n, ok := valkeynum.String2ll(args[o.exp+1])
		seconds := seen&(optEX|optEXAT) != 0
		o.expOK = ok && n > 0 && !(seconds && n > math.MaxInt64/1000)
	}
	return o
}

// expiryMS is the last expiry option's value in ms and whether it is a
// time rather than a length; o must have exp > 0 and expOK.
func (o setOpts) expiryMS(args [][]byte) (ms int64, abs bool) {
	n, _ := valkeynum.String2ll(args[o.exp+1])
	w := args[o.exp]
	if i := bytes.IndexByte(w, 0); i >= 0 {
		w = w[:i]
	}
	switch {
	case resp.EqualFold(w, "ex"):
		return n * 1000, false
	case resp.EqualFold(w, "exat"):
		return n * 1000, true
	case resp.EqualFold(w, "pxat"):
		return n, true
	}
	return n, false
}

// cstr is b as Valkey compares an option word: a C string, up to its first
// NUL byte.
func cstr(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}
