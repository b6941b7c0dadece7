package luaeval

import (
	"math"
	"strconv"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
)

// hashFor returns the hash at key (nil when missing) or a WRONGTYPE reply.
func (c *cmdCtx) hashFor(key string) (*hashValue, *reply) {
	e := c.lookup(key)
	if e == nil {
		return nil, nil
	}
	if e.typ != typeHash {
		r := errorReply(errWrongType)
		return nil, &r
	}
	return e.hash, nil
}

// hashForWrite is Valkey's hashTypeLookupWriteOrCreate: it creates the
// key (empty) when missing.
func (c *cmdCtx) hashForWrite(key string) (*hashValue, *reply) {
	h, r := c.hashFor(key)
	if r != nil || h != nil {
		return h, r
	}
	h = newHash()
	c.put(key, &entry{typ: typeHash, hash: h})
	return h, nil
}

// dropIfEmpty deletes a hash or sorted set left empty, as Valkey does:
// an empty aggregate never exists.
func (c *cmdCtx) dropIfEmpty(key string) {
	e := c.s.db[key]
	if e == nil {
		return
	}
	if (e.typ == typeHash && e.hash.len() == 0) || (e.typ == typeZset && len(e.zset) == 0) {
		delete(c.s.db, key)
	}
}

func cmdHGet(c *cmdCtx) reply {
	h, r := c.hashFor(c.args[1])
	if r != nil {
		return *r
	}
	if h != nil {
		if v, ok := h.get(c.args[2]); ok {
			return bulkReply(v)
		}
	}
	return nullReply()
}

func cmdHMGet(c *cmdCtx) reply {
	h, r := c.hashFor(c.args[1])
	if r != nil {
		return *r
	}
	out := make([]reply, 0, len(c.args)-2)
	for _, f := range c.args[2:] {
		if h != nil {
			if v, ok := h.get(f); ok {
				out = append(out, bulkReply(v))
				continue
			}
		}
		out = append(out, nullReply())
	}
	return arrayReply(out)
}

func (c *cmdCtx) hsetPairs() (int64, *reply) {
	if len(c.args)%2 == 1 {
		r := wrongArity(c.name)
		return 0, &r
	}
	h, r := c.hashForWrite(c.args[1])
	if r != nil {
		return 0, r
	}
	var created int64
	for i := 2; i < len(c.args); i += 2 {
		if h.set(c.args[i], c.args[i+1]) {
			created++
		}
	}
	return created, nil
}

func cmdHSet(c *cmdCtx) reply {
	n, r := c.hsetPairs()
	if r != nil {
		return *r
	}
	return intReply(n)
}

func cmdHMSet(c *cmdCtx) reply {
	if _, r := c.hsetPairs(); r != nil {
		return *r
	}
	return okReply
}

func cmdHSetNX(c *cmdCtx) reply {
	h, r := c.hashForWrite(c.args[1])
	if r != nil {
		return *r
	}
	if _, ok := h.get(c.args[2]); ok {
		return intReply(0)
	}
	h.set(c.args[2], c.args[3])
	return intReply(1)
}

// cmdHIncrBy is Valkey's hincrbyCommand: the increment is parsed first,
// then the key is created if missing, then the field is checked.
func cmdHIncrBy(c *cmdCtx) reply {
	incr, ok := valkeynum.String2ll(c.args[3])
	if !ok {
		return errorReply(errNotInt)
	}
	key := c.args[1]
	h, r := c.hashForWrite(key)
	if r != nil {
		return *r
	}
	var v int64
	if cur, ok := h.get(c.args[2]); ok {
		if v, ok = valkeynum.String2ll(cur); !ok {
			c.dropIfEmpty(key)
			return errorReply("ERR hash value is not an integer")
		}
	}
	if (incr < 0 && v < 0 && incr < math.MinInt64-v) || (incr > 0 && v > 0 && incr > math.MaxInt64-v) {
		c.dropIfEmpty(key)
		return errorReply(errOverflow)
	}
	v += incr
	h.set(c.args[2], strconv.FormatInt(v, 10))
	return intReply(v)
}

func cmdHExists(c *cmdCtx) reply {
	h, r := c.hashFor(c.args[1])
	if r != nil {
		return *r
	}
	if h != nil {
		if _, ok := h.get(c.args[2]); ok {
			return intReply(1)
		}
	}
	return intReply(0)
}

func cmdHDel(c *cmdCtx) reply {
	h, r := c.hashFor(c.args[1])
	if r != nil {
		return *r
	}
	if h == nil {
		return intReply(0)
	}
	var n int64
	for _, f := range c.args[2:] {
		if h.del(f) {
			n++
		}
	}
	c.dropIfEmpty(c.args[1])
	return intReply(n)
}

// cmdHGetAll replies with a map (a flat array in RESP2), in insertion
// order.
func cmdHGetAll(c *cmdCtx) reply {
	h, r := c.hashFor(c.args[1])
	if r != nil {
		return *r
	}
	out := reply{k: kMap}
	if h != nil {
		for _, f := range h.fields {
			out.elems = append(out.elems, bulkReply(f), bulkReply(h.vals[f]))
		}
	}
	return out
}

func cmdHLen(c *cmdCtx) reply {
	h, r := c.hashFor(c.args[1])
	if r != nil {
		return *r
	}
	if h == nil {
		return intReply(0)
	}
	return intReply(int64(h.len()))
}
