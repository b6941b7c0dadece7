package rewrite

// The rule that mints a fencing token, in one place: every script that
// takes a lock (lockproxy's Acquire, and the records a client's script
// acquisition gets) calls grant(ck, incr) with the lock's counter key and
// redis.pcall or redis.call (whichever way the caller wants a counter that
// cannot be incremented reported), and records the number it returns.
//
// A token is zxid-shaped (docs/failover.md): the epoch of the primary that
// minted it times 2^32, plus a count. The epoch lives in Valkey, in the
// hash EpochKey (field "epoch") that lockproxy writes in every database of
// a primary before it sends it anything else (proxy/epoch.go). After a
// change of primary the epoch is higher than any used before, so the first
// grant on a counter that lost writes starts above every token handed out
// before: the INCR is raised to the floor with an INCRBY. Without the hash
// (no lockproxy has established an epoch there: an older lockproxy, or a
// node of a cluster, where the key is not the script's to read) the floor
// is 0, and a grant is the plain INCR it always was.
//
// In front of a cluster (cluster true: the Decider's Cluster) the epoch is
// the node's own failover epoch, as CLUSTER INFO reports it
// (cluster_my_epoch) times 256: a replica promoted in a failover takes a
// config epoch above every other node's, so its first grant of a lock is
// above every token its old primary handed out. Script acquisitions pass
// no cluster flag (see docs/failover.md, Limits).
//
// A counter whose name ends in "}}:lockproxy:grants" is a key's that was
// named without its second '}' before issue 26's finding 7 (see
// CounterKey): its first grant is seeded from the counter under that old
// name, so the key's tokens do not go back across the upgrade.
//
// The snippet holds no comment and no line that needs its line break, so
// that the wrapper of a client's script (wrap.go) can carry it on one line.
const fnGrant = `local function grant(ck, incr, cluster)
  local g = incr('INCR', ck)
  if type(g) ~= 'number' then return g end
  if g == 1 and string.sub(ck, -19) == '}}:lockproxy:grants' then
    local old = tonumber(redis.pcall('GET', string.sub(ck, 1, -19) .. ':lockproxy:grants'))
    if old then g = redis.call('INCRBY', ck, string.format('%d', old)) end
  end
  local f
  if cluster then
    f = tonumber(string.match(redis.call('CLUSTER', 'INFO'), 'cluster_my_epoch:(%d+)'))
    if f then f = f * 256 end
  else
    f = tonumber(redis.pcall('HGET', 'lockproxy:epoch', 'epoch'))
  end
  if f then
    local floor = f * 4294967296
    if g <= floor then g = redis.call('INCRBY', ck, string.format('%d', floor + 1 - g)) end
  end
  return g
end
`

// EpochKey is the hash, in every database of a primary, that holds the
// epoch lockproxy mints tokens under there ("epoch"), the run id of the
// Valkey process it was established for ("run") and when, in Valkey's
// clock (ms), the epoch last changed ("changed"). It is lockproxy's: clients
// may read it, never write it.
const EpochKey = "lockproxy:epoch"

// EpochShift is the count of low bits a token keeps for its count within
// one epoch: the floor of epoch e is e << EpochShift.
const EpochShift = 32

// Flush runs an allowed FLUSHALL or FLUSHDB (ARGV: the command and its
// arguments, as the client sent them) and writes the epoch hash back one
// epoch higher than the highest it held in
// what it emptied (every database for FLUSHALL, the session's for
// FLUSHDB), for the run id of this Valkey process, and when ("changed",
// where a rule's lock delay starts): the counters it deleted start again
// above every token minted before. Its reply is the command's.
var Flush = newScript("flush", `local all = string.upper(ARGV[1]) == 'FLUSHALL'
local e, dbs = 0, {false}
if all then
  dbs = {}
  local db = 0
  while redis.pcall('SELECT', db).ok do
    dbs[#dbs + 1] = db
    e = math.max(e, tonumber(redis.call('HGET', 'lockproxy:epoch', 'epoch') or '0'))
    db = db + 1
  end
else
  e = tonumber(redis.pcall('HGET', 'lockproxy:epoch', 'epoch')) or 0
end
local reply = redis.pcall(unpack(ARGV))
if type(reply) == 'table' and reply.err then return reply end
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local t = redis.call('TIME')
local changed = string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000))
for _, db in ipairs(dbs) do
  if db then redis.call('SELECT', db) end
  redis.call('HSET', 'lockproxy:epoch', 'epoch', string.format('%d', e + 1), 'run', run, 'changed', changed)
end
return reply`)
