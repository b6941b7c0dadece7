package luaeval

// valueType is the type of the value a key holds: the subset of Valkey's
// types that lockproxy's scripts use.
type valueType uint8

const (
	typeString valueType = iota + 1
	typeHash
	typeZset
)

func (t valueType) String() string {
	switch t {
	case typeString:
		return "string"
	case typeHash:
		return "hash"
	case typeZset:
		return "zset"
	}
	return "none"
}

// entry is one key's value and expiry.
type entry struct {
	typ       valueType
	str       string
	hash      *hashValue
	zset      map[string]float64 // member → score; ordering is computed on demand
	hasExpire bool
	expireAt  int64 // unix milliseconds, meaningful when hasExpire
}

// expiredAt reports whether the key is logically gone at now. Valkey
// (db.c keyIsExpired) deletes a key only when now > when, so at the exact
// millisecond of its expiry the key still exists with a PTTL of 0.
func (e *entry) expiredAt(now int64) bool { return e.hasExpire && now > e.expireAt }

// hashValue keeps insertion order because small Valkey hashes (listpack
// encoding, up to 128 fields of up to 64 bytes) reply to HGETALL in
// insertion order, and scripts' tests compare those replies byte for byte.
type hashValue struct {
	fields []string
	vals   map[string]string
}

func newHash() *hashValue { return &hashValue{vals: map[string]string{}} }

func (h *hashValue) get(f string) (string, bool) {
	v, ok := h.vals[f]
	return v, ok
}

// set stores f=v and reports whether f is new. An existing field keeps its
// position, as in a listpack.
func (h *hashValue) set(f, v string) bool {
	_, exists := h.vals[f]
	if !exists {
		h.fields = append(h.fields, f)
	}
	h.vals[f] = v
	return !exists
}

func (h *hashValue) del(f string) bool {
	if _, ok := h.vals[f]; !ok {
		return false
	}
	delete(h.vals, f)
	for i, x := range h.fields {
		if x == f {
			h.fields = append(h.fields[:i], h.fields[i+1:]...)
			break
		}
	}
	return true
}

func (h *hashValue) len() int { return len(h.fields) }

// lookup returns the live entry for key, deleting it first if it has
// expired (Valkey's lazy expiry), or nil.
func (c *cmdCtx) lookup(key string) *entry {
	e := c.s.db[key]
	if e == nil {
		return nil
	}
	if e.expiredAt(c.now) {
		delete(c.s.db, key)
		return nil
	}
	return e
}

// setString stores a string value. Like Valkey's setKey it drops any TTL
// unless keepTTL is set.
func (c *cmdCtx) setString(key, val string, keepTTL bool) {
	old := c.lookup(key)
	e := &entry{typ: typeString, str: val}
	if keepTTL && old != nil {
		e.hasExpire, e.expireAt = old.hasExpire, old.expireAt
	}
	c.put(key, e)
}

func (c *cmdCtx) put(key string, e *entry) {
	if c.s.db == nil {
		c.s.db = map[string]*entry{}
	}
	c.s.db[key] = e
}

func (c *cmdCtx) del(key string) bool {
	if c.lookup(key) == nil {
		return false
	}
	delete(c.s.db, key)
	return true
}
