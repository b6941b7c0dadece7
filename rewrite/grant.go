package rewrite

// The rule that mints a fencing token, in one place: every script that
// takes a lock (lockproxy's Acquire, and the records a client's script
// acquisition gets) calls grant(ck, incr, cluster, run, known) with the
// lock's counter key, redis.pcall or redis.call (whichever way the caller
// wants a counter that cannot be incremented reported) and the epoch clues
// the proxy passed (EpochClue), and records the number it returns.
//
// A token is zxid-shaped (docs/failover.md): the epoch of the primary that
// minted it times 2^32, plus a count. The epoch lives in Valkey, in the
// hash EpochKey of the lock's database, and is established there lazily,
// by the grant itself (epoch(run, known)): the hash names the run id the
// proxy found its primary running (run) and is at or above what a new
// epoch must exceed (known): it stands, two HGETs (epoch, then run),
// nothing written (the common path; no hash: one HGET). Each field is read
// with an HGET of its own, and "changed" only by a caller that asks for it
// (want: the lock delay's): Valkey turns an array reply into a Lua table
// at about 1.5k instructions an element over a 3k call, so an HMGET of
// three fields cost more than two HGETs. Otherwise (the first grant there since the primary
// changed: a promoted replica carries the old primary's hash and run id, a
// restarted or flushed one has none) the epoch becomes one above the
// stored one and known, and is written with the run id and when
// ("changed", where a rule's lock delay starts). With nothing known and no
// hash (known -1: a fresh primary, a proxy that never saw another) the
// epoch is 0, nothing is written, and a grant is the plain INCR it always
// was. Run "": the proxy could not learn the run id (a login without
// INFO); the grant mints under whatever the hash says. After a change of
// primary the epoch is higher than any used before, so the first grant on
// a counter that lost writes starts above every token handed out before:
// the INCR is raised to the floor with an INCRBY.
//
// In front of a cluster (cluster true: the Decider's Cluster) the epoch is
// the node's own failover epoch, as CLUSTER INFO reports it
// (cluster_my_epoch) times 256: a replica promoted in a failover takes a
// config epoch above every other node's, so its first grant of a lock is
// above every token its old primary handed out. A node restarted without
// persistence keeps its config epoch (nodes.conf): the proxy then passes
// known, the highest epoch it saw in a token before, and the epoch is at
// least one above it. Script acquisitions (the monitor) pass the flag as
// the run id "!" (monitorArgs).
//
// A counter whose name ends in "}}:lockproxy:grants" is a key's that was
// named without its second '}' before issue 26's finding 7 (see
// CounterKey): its first grant is seeded from the counter under that old
// name, so the key's tokens do not go back across the upgrade.
//
// The snippet holds no comment and no line that needs its line break, so
// that the wrapper of a client's script (wrap.go) can carry it on one line.
const fnGrant = `local function epoch(run, known, want)
  local h = redis.pcall('HGET', 'lockproxy:epoch', 'epoch')
  if type(h) == 'table' then return 0 end
  local e = tonumber(h)
  if run == '' or e and e >= known and redis.pcall('HGET', 'lockproxy:epoch', 'run') == run then
    if want then return e or 0, tonumber(redis.pcall('HGET', 'lockproxy:epoch', 'changed')) end
    return e or 0
  end
  local n = math.max(e or -1, known) + 1
  if n <= 0 then return 0 end
  local t = redis.call('TIME')
  local ch = t[1] * 1000 + math.floor(t[2] / 1000)
  redis.call('HSET', 'lockproxy:epoch', 'epoch', string.format('%d', n), 'run', run, 'changed', string.format('%d', ch))
  return n, ch
end
local function grant(ck, incr, cluster, run, known)
  local g = incr('INCR', ck)
  if type(g) ~= 'number' then return g end
  if g == 1 and string.sub(ck, -19) == '}}:lockproxy:grants' then
    local old = tonumber(redis.pcall('GET', string.sub(ck, 1, -19) .. ':lockproxy:grants'))
    if old then g = redis.call('INCRBY', ck, string.format('%d', old)) end
  end
  local f
  if cluster then
    f = tonumber(string.match(redis.call('CLUSTER', 'INFO'), 'cluster_my_epoch:(%d+)'))
    if f then f = math.max(f * 256, (known or -1) + 1) end
  else
    f = epoch(run, known)
  end
  if f and f > 0 then
    local floor = f * 4294967296
    if g <= floor then g = redis.call('INCRBY', ck, string.format('%d', floor + 1 - g)) end
  end
  return g
end
`

// fnSlotChanged is where a rule's lock delay starts in front of a
// cluster (acquireDelay): Valkey Cluster records no time of a failover,
// and a script may reach only keys of its own slot, so the mark lives per
// hash slot, in the slot's mark hash (SlotEpochKey, named after the
// slot's index key ik, which Acquire is passed): the epoch the slot's
// last grant saw ("epoch", what fnGrant mints under there: the node's
// config epoch × 256, at least one above the clue known) and when the
// slot first saw it ("changed", the node's clock). A grant that finds no
// mark, or one below its epoch (the slot's node changed: a failover, a
// node restarted without persistence, a flush — each raises the epoch or
// empties the mark), writes the mark with the time now: the lock delay
// runs from then. Several lockproxy instances agree: the mark is in
// Valkey, and one instance's lower clue never lowers it.
const fnSlotChanged = `local function slotChanged(ik, known)
  local f = tonumber(string.match(redis.call('CLUSTER', 'INFO'), 'cluster_my_epoch:(%d+)'))
  if not f then return nil end
  f = math.max(f * 256, (known or -1) + 1)
  local mk = string.match(ik, '^{[^}]*}') .. ':lockproxy:epoch'
  local h = redis.call('HMGET', mk, 'epoch', 'changed')
  if tonumber(h[1]) and tonumber(h[1]) >= f then return tonumber(h[2]) end
  local t = redis.call('TIME')
  local ch = t[1] * 1000 + math.floor(t[2] / 1000)
  redis.call('HSET', mk, 'epoch', string.format('%d', f), 'changed', string.format('%d', ch))
  return ch
end
`

// SlotEpochKey is the lock-delay mark of a cluster's hash slot
// (fnSlotChanged): beside the slot's index, "{tag}:lockproxy:epoch".
// It is lockproxy's: clients may read it, never write it.
func SlotEpochKey(slot uint16) string {
	ik := SlotIndexKey(slot)
	return ik[:len(ik)-len(indexSuffix)] + epochSuffix
}

// epochSuffix ends a slot's lock-delay mark (SlotEpochKey).
const epochSuffix = ":lockproxy:epoch"

// EpochKey is the hash, in each database of a primary where a lock was
// granted since it runs (established by fnGrant), that holds the
// epoch lockproxy mints tokens under there ("epoch"), the run id of the
// Valkey process it was established for ("run") and when, in Valkey's
// clock (ms), the epoch last changed ("changed"). It is lockproxy's: clients
// may read it, never write it.
const EpochKey = "lockproxy:epoch"

// FlushProbeKey is the key the monitor sets before a FLUSHALL inside a
// script, to find the database the script runs in among those the flush
// empties (monitor.lua's flushed), and deletes with the flush. It is
// lockproxy's: a client that planted it would send the script on in
// another database after the flush.
const FlushProbeKey = "{lockproxy}:lockproxy:flush"

// EpochShift is the count of low bits a token keeps for its count within
// one epoch: the floor of epoch e is e << EpochShift.
const EpochShift = 32

// Flush runs an allowed FLUSHALL or FLUSHDB (ARGV: the command and its
// arguments, as the client sent them). Where what it empties held the
// epoch hash (a lock was granted there: every database INFO keyspace lists
// for FLUSHALL, the session's for FLUSHDB), it writes the hash back one
// epoch higher than the highest it read, with the run id it held, and when
// ("changed", where a rule's lock delay starts): the counters it deleted
// start again above every token minted before, whichever lockproxy grants
// next. A database without the hash is left empty, as Valkey leaves it, and
// the script makes no call that fails. Its reply is the command's.
var Flush = newScript("flush", `local all = string.upper(ARGV[1]) == 'FLUSHALL'
local e, had = -1, {}
if all then
  for db in string.gmatch(redis.call('INFO', 'keyspace'), 'db(%d+):') do
    redis.call('SELECT', tonumber(db))
    local h = redis.call('HMGET', 'lockproxy:epoch', 'epoch', 'run')
    if h[1] then
      had[#had + 1] = {tonumber(db), h[2]}
      e = math.max(e, tonumber(h[1]))
    end
  end
else
  local h = redis.pcall('HMGET', 'lockproxy:epoch', 'epoch', 'run')
  if not h.err and h[1] then
    had[1] = {false, h[2]}
    e = tonumber(h[1])
  end
end
local reply = redis.pcall(unpack(ARGV))
if type(reply) == 'table' and reply.err then return reply end
if #had == 0 then return reply end
local t = redis.call('TIME')
local changed = string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000))
for _, d in ipairs(had) do
  if d[1] then redis.call('SELECT', d[1]) end
  redis.call('HSET', 'lockproxy:epoch', 'epoch', string.format('%d', e + 1), 'run', d[2] or '', 'changed', changed)
end
return reply`)
