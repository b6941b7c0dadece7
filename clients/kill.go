package clients

import (
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
)

// UserKnown reports whether Valkey knows the ACL user name; asked is true
// when the answer is not known yet and has been asked for (the command is
// handled again with it, so Kill gives no reply now).
type UserKnown func(name []byte) (known, asked bool)

// Kill answers CLIENT KILL addr:port (+OK, or an error when no client has
// that address) and CLIENT KILL <filter> <value> ... (the number of
// clients closed; SKIPME yes by default), for self among all, closing the
// other clients it kills (Abort). args are from KILL's first argument on.
// reply is nil when user asked Valkey (the command is handled again with
// its answer); keep is false when self is to be closed, after its reply.
func Kill(args [][]byte, self Client, all []Client, user UserKnown, now time.Time) (reply []byte, keep bool) {
	if len(args) == 1 {
		for _, x := range all {
			if x.Conn().Addr == string(args[0]) {
				if x == self {
					return resp.AppendSimple(nil, "OK"), false
				}
				x.Abort()
				return resp.AppendSimple(nil, "OK"), true
			}
		}
		return resp.AppendError(nil, errNoSuchClient), true
	}
	f, errText, asked := parseKill(args, user)
	switch {
	case asked:
		return nil, true
	case errText != "":
		return resp.AppendError(nil, errText), true
	}
	killed, selfKilled := 0, false
	for _, x := range all {
		if !f.match(x, x == self, now) {
			continue
		}
		killed++
		if x == self {
			selfKilled = true
			continue
		}
		x.Abort()
	}
	return resp.AppendInt(nil, int64(killed)), !selfKilled
}

// killFilter is CLIENT KILL's filters; a zero field does not filter.
type killFilter struct {
	id               uint64
	typ, user        []byte
	addr, laddr      string
	maxAge           int64
	skipMe           bool
	hasAddr, hasLad  bool
	hasUser, hasType bool
}

// parseKill reads CLIENT KILL's <filter> <value> pairs in order, as
// Valkey does: the first wrong one is the error (errText), a USER that
// Valkey does not know included.
func parseKill(args [][]byte, user UserKnown) (f killFilter, errText string, asked bool) {
	f.skipMe = true
	if len(args)%2 != 0 {
		return f, errSyntax, false
	}
	for i := 0; i < len(args); i += 2 {
		opt, v := args[i], args[i+1]
		switch {
		case resp.EqualFold(opt, "id"):
			n, ok := valkeynum.String2ll(v)
			if !ok || n <= 0 {
				return f, errClientIDKill, false
			}
			f.id = uint64(n)
		case resp.EqualFold(opt, "type"):
			if !validType(v) {
				return f, errClientType(string(v)), false
			}
			f.typ, f.hasType = v, true
		case resp.EqualFold(opt, "user"):
			f.user, f.hasUser = v, true
			known, asked := user(v)
			if asked {
				return f, "", true
			}
			if !known {
				return f, errNoSuchUser(string(v)), false
			}
		case resp.EqualFold(opt, "addr"):
			f.addr, f.hasAddr = string(v), true
		case resp.EqualFold(opt, "laddr"):
			f.laddr, f.hasLad = string(v), true
		case resp.EqualFold(opt, "skipme"):
			switch {
			case resp.EqualFold(v, "yes"):
				f.skipMe = true
			case resp.EqualFold(v, "no"):
				f.skipMe = false
			default:
				return f, errSyntax, false
			}
		case resp.EqualFold(opt, "maxage"):
			n, ok := valkeynum.String2ll(v)
			if !ok {
				return f, errMaxAge, false
			}
			if n <= 0 {
				return f, errMaxAgeRange, false
			}
			f.maxAge = n
		default:
			return f, errSyntax, false
		}
	}
	return f, "", false
}

// match reports whether the filters take client x (isSelf: the client
// that sent CLIENT KILL).
func (f *killFilter) match(x Client, isSelf bool, now time.Time) bool {
	sn, c := x.Snap(), x.Conn()
	switch {
	case f.id != 0 && c.ID != f.id,
		f.hasType && !sn.isType(f.typ),
		f.hasUser && sn.User != string(f.user),
		f.hasAddr && c.Addr != f.addr,
		f.hasLad && c.Laddr != f.laddr,
		f.maxAge > 0 && int64(now.Sub(c.Since).Seconds()) < f.maxAge,
		f.skipMe && isSelf:
		return false
	}
	return true
}
