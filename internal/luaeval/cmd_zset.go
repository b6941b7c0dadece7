package luaeval

import (
	"math"
	"sort"
	"strings"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
)

func (c *cmdCtx) zsetFor(key string) (map[string]float64, *reply) {
	e := c.lookup(key)
	if e == nil {
		return nil, nil
	}
	if e.typ != typeZset {
		r := errorReply(errWrongType)
		return nil, &r
	}
	return e.zset, nil
}

// cmdZAdd is Valkey's zaddGenericCommand: options, then pair count, then
// option compatibility, then every score is parsed before anything is
// written (the command applies fully or not at all).
func cmdZAdd(c *cmdCtx) reply {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
options:
	for ; i < len(c.args); i++ {
		switch strings.ToLower(c.args[i]) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		case "ch":
			ch = true
		case "incr":
			incr = true
		default:
			break options
		}
	}
	elements := len(c.args) - i
	if elements%2 != 0 || elements == 0 {
		return errorReply(errSyntax)
	}
	elements /= 2
	if nx && xx {
		return errorReply("ERR XX and NX options at the same time are not compatible")
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		return errorReply("ERR GT, LT, and/or NX options at the same time are not compatible")
	}
	if incr && elements > 1 {
		return errorReply("ERR INCR option supports a single increment-element pair")
	}
	scores := make([]float64, elements)
	for j := range scores {
		f, ok := string2d(c.args[i+2*j])
		if !ok {
			return errorReply(errNotFloat)
		}
		scores[j] = f
	}
	key := c.args[1]
	z, r := c.zsetFor(key)
	if r != nil {
		return *r
	}
	var added, updated, processed int64
	var score float64
	if z == nil && !xx {
		z = map[string]float64{}
		c.put(key, &entry{typ: typeZset, zset: z})
	}
	if z != nil {
		for j := 0; j < elements; j++ {
			member := c.args[i+2*j+1]
			s := scores[j]
			cur, exists := z[member]
			switch {
			case exists && nx:
				continue // no-op
			case exists:
				if incr {
					s += cur
					if math.IsNaN(s) {
						return errorReply("ERR resulting score is not a number (NaN)")
					}
				}
				if (lt && s >= cur) || (gt && s <= cur) {
					continue
				}
				if s != cur {
					z[member] = storedScore(s)
					updated++
				}
			case xx:
				continue
			default:
				z[member] = storedScore(s)
				added++
			}
			processed++
			score = s
		}
	}
	if incr {
		if processed > 0 {
			return doubleReply(score)
		}
		return nullReply()
	}
	if ch {
		return intReply(added + updated)
	}
	return intReply(added)
}

// storedScore is the score as a small (listpack-encoded) Valkey sorted set
// keeps it: integral scores are stored as integers, so -0 comes back as 0.
// (A set past 128 members switches to a skiplist and would keep -0.)
func storedScore(s float64) float64 {
	if s == 0 {
		return 0
	}
	return s
}

func cmdZRem(c *cmdCtx) reply {
	z, r := c.zsetFor(c.args[1])
	if r != nil {
		return *r
	}
	var n int64
	for _, m := range c.args[2:] {
		if _, ok := z[m]; ok {
			delete(z, m)
			n++
		}
	}
	c.dropIfEmpty(c.args[1])
	return intReply(n)
}

func cmdZScore(c *cmdCtx) reply {
	z, r := c.zsetFor(c.args[1])
	if r != nil {
		return *r
	}
	s, ok := z[c.args[2]]
	if !ok {
		return nullReply()
	}
	return doubleReply(s)
}

func cmdZCard(c *cmdCtx) reply {
	z, r := c.zsetFor(c.args[1])
	if r != nil {
		return *r
	}
	return intReply(int64(len(z)))
}

// scoreBound is one end of a score range.
type scoreBound struct {
	v    float64
	excl bool
}

// parseScoreBound is Valkey's zslParseRangeItem: "(" makes the bound
// exclusive and the rest goes through plain strtod (so leading spaces and
// even an empty string, read as 0, are accepted); NaN is rejected.
func parseScoreBound(s string) (scoreBound, bool) {
	var b scoreBound
	if strings.HasPrefix(s, "(") {
		b.excl = true
		s = s[1:]
	}
	s = cstr(s) // strtod stops at a NUL, and Valkey only checks that it reached one
	f, n, _ := strtod(s)
	if n != len(s) || math.IsNaN(f) {
		return b, false
	}
	b.v = f
	return b, true
}

// cmdZRangeByScore covers ZRANGEBYSCORE key min max [WITHSCORES]
// [LIMIT offset count], with Valkey's order of checks: options (syntax
// errors, LIMIT integers), then the range, then the key.
func cmdZRangeByScore(c *cmdCtx) reply {
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := 4; j < len(c.args); j++ {
		left := len(c.args) - j - 1
		switch {
		case strings.EqualFold(c.args[j], "withscores"):
			withScores = true
		case strings.EqualFold(c.args[j], "limit") && left >= 2:
			o, ok1 := valkeynum.String2ll(c.args[j+1])
			if !ok1 {
				return errorReply(errNotInt)
			}
			l, ok2 := valkeynum.String2ll(c.args[j+2])
			if !ok2 {
				return errorReply(errNotInt)
			}
			offset, limit = o, l
			j += 2
		default:
			return errorReply(errSyntax)
		}
	}
	lo, ok1 := parseScoreBound(c.args[2])
	hi, ok2 := parseScoreBound(c.args[3])
	if !ok1 || !ok2 {
		return errorReply("ERR min or max is not a float")
	}
	z, r := c.zsetFor(c.args[1])
	if r != nil {
		return *r
	}
	out := arrayReply([]reply{})
	if z == nil || offset < 0 || (offset > 0 && offset >= int64(len(z))) {
		return out
	}
	type item struct {
		m string
		s float64
	}
	items := make([]item, 0, len(z))
	for m, s := range z {
		if (lo.excl && s <= lo.v) || (!lo.excl && s < lo.v) || (hi.excl && s >= hi.v) || (!hi.excl && s > hi.v) {
			continue
		}
		items = append(items, item{m, s})
	}
	// Valkey orders by score, then by member bytes (memcmp).
	sort.Slice(items, func(a, b int) bool {
		if items[a].s != items[b].s {
			return items[a].s < items[b].s
		}
		return items[a].m < items[b].m
	})
	if offset > int64(len(items)) {
		offset = int64(len(items))
	}
	items = items[offset:]
	if limit >= 0 && limit < int64(len(items)) {
		items = items[:limit]
	}
	for _, it := range items {
		switch {
		case !withScores:
			out.elems = append(out.elems, bulkReply(it.m))
		case c.resp >= 3:
			out.elems = append(out.elems, arrayReply([]reply{bulkReply(it.m), doubleReply(it.s)}))
		default:
			out.elems = append(out.elems, bulkReply(it.m), doubleReply(it.s))
		}
	}
	return out
}
