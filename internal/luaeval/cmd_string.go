package luaeval

import (
	"math"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
)

func cmdGet(c *cmdCtx) reply {
	e := c.lookup(c.args[1])
	if e == nil {
		return nullReply()
	}
	if e.typ != typeString {
		return errorReply(errWrongType)
	}
	return bulkReply(e.str)
}

// SET flags, as in Valkey's t_string.c.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setEX
	setPX
	setEXAT
	setPXAT
)

// parseSetOptions is Valkey's parseExtendedStringArgumentsOrReply for SET.
// The conditions mirror it exactly, including what it tolerates: "NX NX"
// and "EX 1 EX 2" (last wins) are accepted; "NX XX", "EX 1 PX 2",
// "KEEPTTL EX 1" and a trailing "EX" with no value are syntax errors.
func parseSetOptions(args []string) (flags int, expire string, ok bool) {
	for j := 3; j < len(args); j++ {
		opt := strings.ToLower(args[j])
		hasNext := j+1 < len(args)
		switch {
		case opt == "nx" && flags&setXX == 0:
			flags |= setNX
		case opt == "xx" && flags&setNX == 0:
			flags |= setXX
		case opt == "get":
			flags |= setGet
		case opt == "keepttl" && flags&(setEX|setEXAT|setPX|setPXAT) == 0:
			flags |= setKeepTTL
		case opt == "ex" && flags&(setKeepTTL|setEXAT|setPX|setPXAT) == 0 && hasNext:
			flags |= setEX
			expire = args[j+1]
			j++
		case opt == "px" && flags&(setKeepTTL|setEX|setEXAT|setPXAT) == 0 && hasNext:
			flags |= setPX
			expire = args[j+1]
			j++
		case opt == "exat" && flags&(setKeepTTL|setEX|setPX|setPXAT) == 0 && hasNext:
			flags |= setEXAT
			expire = args[j+1]
			j++
		case opt == "pxat" && flags&(setKeepTTL|setEX|setEXAT|setPX) == 0 && hasNext:
			flags |= setPXAT
			expire = args[j+1]
			j++
		default:
			return 0, "", false
		}
	}
	return flags, expire, true
}

// expireMillis is Valkey's getExpireMillisecondsOrReply: the value must be
// a positive integer, seconds must not overflow when scaled, and relative
// times are added to the command's time.
func (c *cmdCtx) expireMillis(v string, flags int) (int64, *reply) {
	ms, ok := valkeynum.String2ll(v)
	if !ok {
		r := errorReply(errNotInt)
		return 0, &r
	}
	seconds := flags&(setEX|setEXAT) != 0
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		r := errorReply("ERR invalid expire time in '" + c.name + "' command")
		return 0, &r
	}
	if seconds {
		ms *= 1000
	}
	if flags&(setEX|setPX) != 0 {
		ms += c.now // C overflow wraps negative and is caught below
	}
	if ms <= 0 {
		r := errorReply("ERR invalid expire time in '" + c.name + "' command")
		return 0, &r
	}
	return ms, nil
}

func cmdSet(c *cmdCtx) reply {
	flags, expire, ok := parseSetOptions(c.args)
	if !ok {
		return errorReply(errSyntax)
	}
	return c.setGeneric(flags, c.args[1], c.args[2], expire, okReply, nullReply())
}

// setGeneric is Valkey's setGenericCommand.
func (c *cmdCtx) setGeneric(flags int, key, val, expire string, okR, abortR reply) reply {
	var when int64
	hasExpire := flags&(setEX|setPX|setEXAT|setPXAT) != 0
	if hasExpire {
		var r *reply
		if when, r = c.expireMillis(expire, flags); r != nil {
			return *r
		}
	}
	old := c.lookup(key)
	var getR reply
	if flags&setGet != 0 {
		switch {
		case old == nil:
			getR = nullReply()
		case old.typ != typeString:
			return errorReply(errWrongType)
		default:
			getR = bulkReply(old.str)
		}
	}
	found := old != nil
	if (flags&setNX != 0 && found) || (flags&setXX != 0 && !found) {
		if flags&setGet != 0 {
			return getR
		}
		return abortR
	}
	c.setString(key, val, flags&setKeepTTL != 0)
	if hasExpire {
		e := c.s.db[key]
		e.hasExpire, e.expireAt = true, when
	}
	if flags&setGet != 0 {
		return getR
	}
	return okR
}

func cmdSetNX(c *cmdCtx) reply {
	return c.setGeneric(setNX, c.args[1], c.args[2], "", intReply(1), intReply(0))
}

func cmdSetEX(c *cmdCtx) reply {
	return c.setGeneric(setEX, c.args[1], c.args[3], c.args[2], okReply, nullReply())
}

func cmdPSetEX(c *cmdCtx) reply {
	return c.setGeneric(setPX, c.args[1], c.args[3], c.args[2], okReply, nullReply())
}

func cmdGetSet(c *cmdCtx) reply {
	r := cmdGet(c)
	if r.isError() {
		return r
	}
	c.setString(c.args[1], c.args[2], false)
	return r
}

func cmdGetDel(c *cmdCtx) reply {
	r := cmdGet(c)
	if r.k == kBulk {
		c.del(c.args[1])
	}
	return r
}

// cmdMGet never fails on type: a key of another type reads as nil.
func cmdMGet(c *cmdCtx) reply {
	out := make([]reply, 0, len(c.args)-1)
	for _, k := range c.args[1:] {
		e := c.lookup(k)
		if e == nil || e.typ != typeString {
			out = append(out, nullReply())
		} else {
			out = append(out, bulkReply(e.str))
		}
	}
	return arrayReply(out)
}

func cmdIncr(c *cmdCtx) reply { return c.incrDecr(1) }
func cmdDecr(c *cmdCtx) reply { return c.incrDecr(-1) }

func cmdIncrBy(c *cmdCtx) reply {
	n, ok := valkeynum.String2ll(c.args[2])
	if !ok {
		return errorReply(errNotInt)
	}
	return c.incrDecr(n)
}

func cmdDecrBy(c *cmdCtx) reply {
	n, ok := valkeynum.String2ll(c.args[2])
	if !ok {
		return errorReply(errNotInt)
	}
	if n == math.MinInt64 {
		return errorReply("ERR decrement would overflow")
	}
	return c.incrDecr(-n)
}

// incrDecr is Valkey's incrDecrCommand. The key keeps its TTL.
func (c *cmdCtx) incrDecr(incr int64) reply {
	key := c.args[1]
	e := c.lookup(key)
	var v int64
	if e != nil {
		if e.typ != typeString {
			return errorReply(errWrongType)
		}
		var ok bool
		if v, ok = valkeynum.String2ll(e.str); !ok {
			return errorReply(errNotInt)
		}
	}
	if (incr < 0 && v < 0 && incr < math.MinInt64-v) || (incr > 0 && v > 0 && incr > math.MaxInt64-v) {
		return errorReply(errOverflow)
	}
	v += incr
	c.setString(key, strconv.FormatInt(v, 10), true)
	return intReply(v)
}

// cmdGetEx is Valkey's getexCommand: the options are parsed first (a
// syntax error wins over everything), then a missing key answers nil and
// a key of another type WRONGTYPE before the expire time is validated;
// the value is answered as it was, then the expiry changes. An absolute
// time not in the future deletes the key.
func cmdGetEx(c *cmdCtx) reply {
	const persist = setKeepTTL // GETEX has no KEEPTTL: the bit stands for PERSIST
	var flags int
	var expire string
	expiry := setEX | setPX | setEXAT | setPXAT
	for j := 2; j < len(c.args); j++ {
		opt := strings.ToLower(c.args[j])
		hasNext := j+1 < len(c.args)
		var f int
		switch opt {
		case "persist":
			if flags&expiry != 0 {
				return errorReply(errSyntax)
			}
			flags |= persist
			continue
		case "ex":
			f = setEX
		case "px":
			f = setPX
		case "exat":
			f = setEXAT
		case "pxat":
			f = setPXAT
		default:
			return errorReply(errSyntax)
		}
		if flags&(persist|(expiry&^f)) != 0 || !hasNext {
			return errorReply(errSyntax)
		}
		flags |= f
		expire = c.args[j+1]
		j++
	}
	e := c.lookup(c.args[1])
	if e == nil {
		return nullReply()
	}
	if e.typ != typeString {
		return errorReply(errWrongType)
	}
	var when int64
	if flags&expiry != 0 {
		var r *reply
		if when, r = c.expireMillis(expire, flags); r != nil {
			return *r
		}
	}
	out := bulkReply(e.str)
	switch {
	case flags&(setEXAT|setPXAT) != 0 && when <= c.now:
		c.del(c.args[1])
	case flags&expiry != 0:
		e.hasExpire, e.expireAt = true, when
	case flags&persist != 0:
		e.hasExpire = false
	}
	return out
}

// cmdMSet is Valkey's msetCommand: pairs only (an odd count of arguments
// after the name is an arity error), each key set as by SET, its TTL
// dropped.
func cmdMSet(c *cmdCtx) reply {
	if len(c.args)%2 == 0 {
		return wrongArity(c.name)
	}
	for i := 1; i < len(c.args); i += 2 {
		c.setString(c.args[i], c.args[i+1], false)
	}
	return okReply
}
