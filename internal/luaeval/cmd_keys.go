package luaeval

import (
	"math"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
)

// cmdDel serves DEL and UNLINK. An expired key is not counted: Valkey
// expires it on lookup first.
func cmdDel(c *cmdCtx) reply {
	var n int64
	for _, k := range c.args[1:] {
		if c.del(k) {
			n++
		}
	}
	return intReply(n)
}

// cmdExists counts a key once per mention, as Valkey does.
func cmdExists(c *cmdCtx) reply {
	var n int64
	for _, k := range c.args[1:] {
		if c.lookup(k) != nil {
			n++
		}
	}
	return intReply(n)
}

func cmdType(c *cmdCtx) reply {
	e := c.lookup(c.args[1])
	if e == nil {
		return statusReply("none")
	}
	return statusReply(e.typ.String())
}

// EXPIRE condition flags.
const (
	expNX = 1 << iota
	expXX
	expGT
	expLT
)

func cmdExpire(c *cmdCtx) reply    { return c.expireGeneric(c.now, true) }
func cmdPExpire(c *cmdCtx) reply   { return c.expireGeneric(c.now, false) }
func cmdExpireAt(c *cmdCtx) reply  { return c.expireGeneric(0, true) }
func cmdPExpireAt(c *cmdCtx) reply { return c.expireGeneric(0, false) }

// expireGeneric is Valkey's expireGenericCommand: options are validated
// before the number, relative and absolute forms share the overflow
// checks, and a time not in the future deletes the key and replies 1.
func (c *cmdCtx) expireGeneric(basetime int64, seconds bool) reply {
	var flags int
	for _, a := range c.args[3:] {
		switch strings.ToLower(a) {
		case "nx":
			flags |= expNX
		case "xx":
			flags |= expXX
		case "gt":
			flags |= expGT
		case "lt":
			flags |= expLT
		default:
			return errorReply("ERR Unsupported option " + a)
		}
	}
	nx, xx, gt, lt := flags&expNX != 0, flags&expXX != 0, flags&expGT != 0, flags&expLT != 0
	if nx && (xx || gt || lt) {
		return errorReply("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if gt && lt {
		return errorReply("ERR GT and LT options at the same time are not compatible")
	}
	when, ok := valkeynum.String2ll(c.args[2])
	if !ok {
		return errorReply(errNotInt)
	}
	badTime := errorReply("ERR invalid expire time in '" + c.name + "' command")
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return badTime
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		return badTime
	}
	when += basetime

	key := c.args[1]
	e := c.lookup(key)
	if e == nil {
		return intReply(0)
	}
	if flags != 0 {
		cur := int64(-1)
		if e.hasExpire {
			cur = e.expireAt
		}
		switch {
		case nx && cur != -1,
			xx && cur == -1,
			gt && (when <= cur || cur == -1),
			lt && cur != -1 && when >= cur:
			return intReply(0)
		}
	}
	if when <= c.now {
		c.del(key)
		return intReply(1)
	}
	e.hasExpire, e.expireAt = true, when
	return intReply(1)
}

func cmdPersist(c *cmdCtx) reply {
	e := c.lookup(c.args[1])
	if e == nil || !e.hasExpire {
		return intReply(0)
	}
	e.hasExpire = false
	return intReply(1)
}

func cmdTTL(c *cmdCtx) reply         { return c.ttlGeneric(false, false) }
func cmdPTTL(c *cmdCtx) reply        { return c.ttlGeneric(true, false) }
func cmdExpireTime(c *cmdCtx) reply  { return c.ttlGeneric(false, true) }
func cmdPExpireTime(c *cmdCtx) reply { return c.ttlGeneric(true, true) }

// ttlGeneric is Valkey's ttlGenericCommand: -2 missing, -1 no expiry,
// seconds are rounded to nearest ((ms+500)/1000).
func (c *cmdCtx) ttlGeneric(ms, abs bool) reply {
	e := c.lookup(c.args[1])
	if e == nil {
		return intReply(-2)
	}
	if !e.hasExpire {
		return intReply(-1)
	}
	ttl := e.expireAt
	if !abs {
		ttl -= c.now
	}
	if ttl < 0 {
		ttl = 0
	}
	if !ms {
		ttl = (ttl + 500) / 1000
	}
	return intReply(ttl)
}

func cmdPing(c *cmdCtx) reply {
	switch len(c.args) {
	case 1:
		return statusReply("PONG")
	case 2:
		return bulkReply(c.args[1])
	}
	return wrongArity(c.name)
}

func cmdEcho(c *cmdCtx) reply { return bulkReply(c.args[1]) }

func cmdDBSize(c *cmdCtx) reply {
	var n int64
	for _, e := range c.s.db {
		if !e.expiredAt(c.now) {
			n++
		}
	}
	return intReply(n)
}

// cmdTime reads the Store's clock, so a script that computes deadlines
// from TIME sees the same fake time as the keyspace.
func cmdTime(c *cmdCtx) reply {
	t := c.s.nowLocked()
	return arrayReply([]reply{
		bulkReply(strconv.FormatInt(t.Unix(), 10)),
		bulkReply(strconv.FormatInt(int64(t.Nanosecond()/1000), 10)),
	})
}

// cmdFlush serves FLUSHALL and FLUSHDB (one database here). It keeps the
// script cache, as Valkey does.
func cmdFlush(c *cmdCtx) reply {
	if len(c.args) > 2 || (len(c.args) == 2 && !strings.EqualFold(c.args[1], "sync") && !strings.EqualFold(c.args[1], "async")) {
		return errorReply(errSyntax)
	}
	c.s.db = nil
	return okReply
}
