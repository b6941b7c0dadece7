package rewrite

import (
	"strconv"
	"sync"

	"github.com/lockproxy/lockproxy/cluster"
)

// The locks' index: a sorted set, kept by lockproxy's scripts beside the
// owner records, whose members are the records keys (RecordsKey) there
// are, so that LOCKPROXY LOCKS and STATS read it instead of walking the
// keyspace with SCAN.
//
// A script may only touch keys of one hash slot in a cluster, so there the
// index is one key per slot: "{<tag>}:lockproxy:index", tag a short string
// that hashes to that slot (slotIndexKeys), in the slot of the records it
// lists. In front of one Valkey it is one key per database,
// StandaloneIndexKey.
//
// A member's score is when its records expire as far as the script that
// wrote it knew (the lease end plus keep_lapsed; +inf for a lock without a
// lease; 0 for one found by a SCAN): renewals do not touch the index, so a
// score may be earlier than the records' expiry, never later unless the
// lease was shortened. An acquisition whose grant number is 1 more than a
// multiple of 4 (the first of a lock, then every fourth) looks at eight
// members whose score has passed (fnIndex): a member whose records are gone leaves, one
// whose records are still there gets their expiry as its score. So the
// index holds the records there are, and those that expired unreleased
// since the slot's last acquisitions; a release takes its member out when
// it deleted the records (fnUnindex). A reader removes a member whose
// records are gone (Unindex).
//
// Records written before the index existed (by an older lockproxy) are
// found by one SCAN, the first time a reader finds no IndexedMember in
// the index of the server's database, or when an operator asks
// (LOCKPROXY REINDEX).

const indexSuffix = ":lockproxy:index"

// StandaloneIndexKey is the index of a database of a Valkey that is not a
// cluster.
const StandaloneIndexKey = "{lockproxy}" + indexSuffix

// IndexedMember is the member a reader adds to an index, score +inf, once
// a SCAN has put every earlier records key of its server and database in
// the indexes (in a cluster: in the index of the lowest slot the node
// serves). No records key has this name: they all end in RecordsSuffix.
const IndexedMember = "lockproxy:indexed"

// IndexKey names the index a lock's records key is listed in: in a
// cluster, the index of the records' slot, which is the lock's unless the
// lock's name can neither keep a tag nor be wrapped in one (see
// lockproxyKey). The bytes are shared: callers must not change them (an
// append copies them: no room is left).
func IndexKey(lock []byte, inCluster bool) []byte {
	if !inCluster {
		return standaloneIndex
	}
	if !hasHashTag(lock) && !canWrap(lock) {
		return slotIndexKeys()[cluster.Slot(RecordsKey(lock))]
	}
	return slotIndexKeys()[cluster.Slot(lock)]
}

// RecordsIndexKey names the index a records key is listed in.
func RecordsIndexKey(records []byte, inCluster bool) []byte {
	if !inCluster {
		return standaloneIndex
	}
	return slotIndexKeys()[cluster.Slot(records)]
}

var standaloneIndex = []byte(StandaloneIndexKey)[:len(StandaloneIndexKey):len(StandaloneIndexKey)]

// SlotIndexKey names the index of a cluster's hash slot.
func SlotIndexKey(slot uint16) string {
	return string(slotIndexKeys()[slot&(cluster.SlotCount-1)])
}

// slotIndexKeys is, for each hash slot, its index's name: the tag is the
// first string in base 36 counting (0, 1, ..., z, 10, ...) that hashes to
// the slot, at most 4 characters.
var slotIndexKeys = sync.OnceValue(func() *[cluster.SlotCount][]byte {
	var t [cluster.SlotCount][]byte
	left := cluster.SlotCount
	for n := int64(0); left > 0; n++ {
		s := strconv.FormatInt(n, 36)
		if sl := cluster.Slot([]byte(s)); t[sl] == nil {
			k := "{" + s + "}" + indexSuffix
			t[sl] = []byte(k)[:len(k):len(k)]
			left--
		}
	}
	return &t
})

// The index's helpers for the scripts (see scripts.go).
const (
	// index lists rk in the index ik after grant g, whose lease ends at e
	// (0: no lease), and, when g is 1 more than a multiple of 4 (the
	// first, then every fourth), looks at eight members whose score has
	// passed (as many, over a lock's grants, as two at each: a look is a
	// call of its own, an empty one about 8k instructions): a member whose records are gone leaves,
	// one whose records are there gets their expiry. A member's records
	// are in ik's slot; one absent while the slot migrates (see absent)
	// ends the look. It returns the ZADD's reply: 1 when rk was not listed
	// (the monitor's grant takes that for a new records hash), nil when
	// the index cannot be written.
	fnIndex = `local function index(ik, rk, e, keep, now, g)
  local s = '+inf'
  if e > 0 then s = e + keep end
  local z = redis.pcall('ZADD', ik, s, rk)
  if type(z) ~= 'number' then return nil end
  if g % 4 ~= 1 then return z end
  local due = redis.call('ZRANGEBYSCORE', ik, '-inf', now, 'LIMIT', '0', '8')
  for i = 1, #due do
    local t = redis.pcall('PTTL', due[i])
    if type(t) ~= 'number' then return z end
    if t == -2 then redis.call('ZREM', ik, due[i])
    elseif t == -1 then redis.call('ZADD', ik, '+inf', due[i])
    else redis.call('ZADD', ik, now + t, due[i]) end
  end
  return z
end
`
	// unindex takes rk out of the index ik once its records are gone (an
	// error: absent while the slot migrates, see absent).
	fnUnindex = `local function unindex(ik, rk)
  if redis.pcall('EXISTS', rk) ~= 1 then redis.pcall('ZREM', ik, rk) end
end
`
)

// Unindex is a reader's clean-up of one member: it leaves the index only
// if its records are gone, checked in the same step, so a lock granted
// again meanwhile stays listed.
//
// KEYS[1] the index, KEYS[2] the records key (the member). Reply: 1 when
// it left, else 0.
var Unindex = newScript("unindex", `if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
return redis.call('ZREM', KEYS[1], KEYS[2])`)
