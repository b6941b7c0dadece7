package locks

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Durable script calls (issue 29): a client's script under the monitor
// that declares a lock of a rule with durability, or writes a key such a
// lock guards. The monitor keeps its records inside Valkey, and the
// script's reply is the client's own: nothing in it says whether the
// script took a lock. So lockproxy reads the counters of the durable locks
// the script declares just before it (MGET, on the same connection), and
// follows it with WAIT N D. With N acknowledgements the client gets the
// script's reply. With fewer, undoScriptGrantsScript deletes every lock
// whose record for this client holds a grant above the counter read
// before the script (minted by the script: a lock the client held before
// and only renewed is left alone), and the client is answered NOTDURABLE:
// a script has no generic "not taken".
//
// The price: an MGET and a WAIT for every such call, even one that took
// nothing (the WAIT then waits for the connection's earlier writes). A
// script run with EVAL_RO writes nothing: it answers at once.

// undoScriptGrantsScript: KEYS per lock its key, counter, records; ARGV
// per lock the owner and the counter read before the script. Returns how
// many grants it undid.
const undoScriptGrantsScript = `local n = 0
for i = 1, #KEYS, 3 do
  local j = (i - 1) / 3 * 2 + 1
  local r = redis.call('HGET', KEYS[i + 2], ARGV[j])
  local g, v
  if r then g, v = string.match(r, '^(%d+) %d+ %d+ (.*)$') end
  if g and tonumber(g) > tonumber(ARGV[j + 1]) then
    local now = redis.pcall('GET', KEYS[i])
    if type(now) == 'table' then now = '' end
    if now == v and redis.call('GET', KEYS[i + 1]) == g then redis.call('DEL', KEYS[i]) end
    redis.call('HDEL', KEYS[i + 2], ARGV[j])
    n = n + 1
  end
end
return n`

// DurableLocks is a plan's durable locks (key, counter, records, owner),
// copied (the plan aliases the command's arguments); in front of a
// cluster (clustered) only those in the slot the script goes to (one MGET
// reads their counters there).
func DurableLocks(plan rewrite.Plan, clustered bool) [][]byte {
	var out [][]byte
	for i := 0; i+3 < len(plan.DurableLocks); i += 4 {
		if clustered && (len(plan.Keys) == 0 || cluster.Slot(plan.DurableLocks[i]) != cluster.Slot(plan.Keys[0])) {
			continue
		}
		for _, b := range plan.DurableLocks[i : i+4] {
			out = append(out, bytes.Clone(b))
		}
	}
	return out
}

// ScriptWait pairs a client's script with the read of its durable locks'
// counters (locks: DurableLocks) before it and its WAIT after it (see
// above), in database db: onCounters is the read's hook (nil when there
// are no locks: no read is sent), onScript the script's, onWait the
// WAIT's, which answers the client.
func (k *Keeper) ScriptWait(plan rewrite.Plan, locks [][]byte, db, proto int) (onCounters, onScript, onWait func([]byte) []byte) {
	d, sc, shape := plan.Durable, plan.Script, plan.Shape
	var mu sync.Mutex
	var before []int64 // nil: not read
	var folded []byte
	waited := false
	undo := func() { k.undoScriptGrantsLater(locks, before, db) }
	if len(locks) > 0 {
		n := len(locks) / 4
		onCounters = func(reply []byte) []byte {
			mu.Lock()
			defer mu.Unlock()
			before = counters(reply, n)
			return reply
		}
	}
	onScript = func(reply []byte) []byte {
		f := bytes.Clone(rewrite.Fold(shape, nil, sc.Unwrap(reply), proto)) // kept past this read (WriteWait)
		mu.Lock()
		defer mu.Unlock()
		folded = f
		if waited {
			// Its WAIT was answered first (a redirected script): it
			// cannot vouch for it.
			undo()
		}
		return reply
	}
	onWait = func(reply []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		waited = true
		acked, ok := resp.ReplyInt(reply)
		if folded != nil && ok && acked >= int64(d.Replicas) {
			return folded
		}
		k.Short.Add(1)
		if folded != nil {
			undo()
		}
		return resp.AppendError(nil, errNotDurableScript(scriptKey(plan, locks), d))
	}
	return onCounters, onScript, onWait
}

// scriptKey is the lock a durable script's NOTDURABLE names: its first
// durable lock, else its first key.
func scriptKey(plan rewrite.Plan, locks [][]byte) string {
	if len(locks) > 0 {
		return string(locks[0])
	} else if len(plan.Keys) > 0 {
		return string(plan.Keys[0])
	}
	return ""
}

// CountersRead is the MGET of the counters of locks (DurableLocks).
func CountersRead(locks [][]byte) []byte {
	mget := make([][]byte, 0, 1+len(locks)/4)
	mget = append(mget, []byte("MGET"))
	for i := 0; i < len(locks); i += 4 {
		mget = append(mget, locks[i+1])
	}
	return resp.AppendCommand(nil, mget...)
}

// counters reads an MGET's reply of n counters: nil unless it is one.
func counters(reply []byte, n int) []int64 {
	v, _, err := resp.Parse(reply)
	if err != nil || v.Type != '*' || len(v.Elems) != n {
		return nil
	}
	out := make([]int64, n)
	for i, e := range v.Elems {
		if e.Null {
			continue
		}
		c, err := strconv.ParseInt(string(e.Str), 10, 64)
		if err != nil {
			return nil
		}
		out[i] = c
	}
	return out
}

// undoScriptGrantsLater undoes, off the reply path, the grants a script
// minted on locks (above the counters read before it, before; nil: the
// read failed, and nothing can be told apart).
func (k *Keeper) undoScriptGrantsLater(locks [][]byte, before []int64, db int) {
	if len(locks) == 0 {
		return
	}
	if before == nil {
		k.log.Warn("a script under durability was not acknowledged by enough replicas in time, and the grants it may have made cannot be told apart (the counters' read failed): not undone",
			"key", string(locks[0]))
		return
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.undoScriptGrants(locks, before, db)
	}()
}

// undoScriptGrants runs undoScriptGrantsScript (Host.Eval: within the
// dial timeout).
func (k *Keeper) undoScriptGrants(locks [][]byte, before []int64, db int) {
	var keys []string
	var args []any
	for i := 0; i < len(locks); i += 4 {
		keys = append(keys, string(locks[i]), string(locks[i+1]), string(locks[i+2]))
		args = append(args, string(locks[i+3]), strconv.FormatInt(before[i/4], 10))
	}
	n, err := k.host.Eval(locks[0], db, undoScriptGrantsScript, keys, args...)
	if err != nil {
		k.log.Warn("could not undo a script's acquisitions its replicas did not acknowledge", "key", keys[0], "error", err)
		return
	}
	k.Undone.Add(n)
	if n > 0 {
		k.log.Warn("a script's acquisitions were not acknowledged by enough replicas in time: undone, answered NOTDURABLE", "key", keys[0], "undone", n)
	}
}
