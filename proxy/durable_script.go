package proxy

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

// durableLocks is a plan's durable locks (key, counter, records, owner),
// copied (the plan aliases the command's arguments); in front of a
// cluster only those in the slot the script goes to (one MGET reads their
// counters there).
func (s *session) durableLocks(plan rewrite.Plan) [][]byte {
	var out [][]byte
	for i := 0; i+3 < len(plan.DurableLocks); i += 4 {
		if s.p.cl != nil && (len(plan.Keys) == 0 || cluster.Slot(plan.DurableLocks[i]) != cluster.Slot(plan.Keys[0])) {
			continue
		}
		for _, b := range plan.DurableLocks[i : i+4] {
			out = append(out, bytes.Clone(b))
		}
	}
	return out
}

// runDurableScript sends the counters' read, a monitored script and its
// WAIT, and answers the client from them (see above).
func (s *session) runDurableScript(plan rewrite.Plan) {
	d, proto, sc, shape := plan.Durable, s.proto, plan.Script, plan.Shape
	locks := s.durableLocks(plan)
	db := s.db
	var mu sync.Mutex
	var before []int64 // nil: not read
	var folded []byte
	waited := false
	undo := func() { s.p.undoScriptGrantsLater(locks, before, db) }
	muted := s.mute
	s.mute = true
	if len(locks) > 0 {
		n := len(locks) / 4
		s.forward(countersRead(locks), func(reply []byte) []byte {
			mu.Lock()
			defer mu.Unlock()
			before = counters(reply, n)
			return reply
		})
	}
	hook := func(reply []byte) []byte {
		f := bytes.Clone(rewrite.Fold(shape, nil, sc.Unwrap(reply), proto)) // kept past this read (runDurableWrite)
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
	if s.firstUse(sc) || sc.Fn != "" {
		s.forward(encodeScript(plan, false), hook)
	} else {
		sha := encodeScript(plan, true)
		s.forwardRetry(sha, sha, hook)
	}
	s.mute = muted
	s.forward(waitCommand(d), func(reply []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		waited = true
		acked, ok := resp.ReplyInt(reply)
		if folded != nil && ok && acked >= int64(d.Replicas) {
			return folded
		}
		s.p.durable.short.Add(1)
		if folded != nil {
			undo()
		}
		key := ""
		if len(locks) > 0 {
			key = string(locks[0])
		} else if len(plan.Keys) > 0 {
			key = string(plan.Keys[0])
		}
		return resp.AppendError(nil, errNotDurableScript(key, d))
	})
}

// countersRead is the MGET of the counters of locks (durableLocks).
func countersRead(locks [][]byte) []byte {
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
func (p *Proxy) undoScriptGrantsLater(locks [][]byte, before []int64, db int) {
	if len(locks) == 0 {
		return
	}
	if before == nil {
		p.log.Warn("a script under durability was not acknowledged by enough replicas in time, and the grants it may have made cannot be told apart (the counters' read failed): not undone",
			"key", string(locks[0]))
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.undoScriptGrants(locks, before, db)
	}()
}

// undoScriptGrants runs undoScriptGrantsScript, within the dial timeout.
func (p *Proxy) undoScriptGrants(locks [][]byte, before []int64, db int) {
	var keys []string
	var args []any
	for i := 0; i < len(locks); i += 4 {
		keys = append(keys, string(locks[i]), string(locks[i+1]), string(locks[i+2]))
		args = append(args, string(locks[i+3]), strconv.FormatInt(before[i/4], 10))
	}
	n, err := p.evalUndo(locks[0], db, undoScriptGrantsScript, keys, args...)
	if err != nil {
		p.log.Warn("could not undo a script's acquisitions its replicas did not acknowledge", "key", keys[0], "error", err)
		return
	}
	p.durable.undone.Add(n)
	if n > 0 {
		p.log.Warn("a script's acquisitions were not acknowledged by enough replicas in time: undone, answered NOTDURABLE", "key", keys[0], "undone", n)
	}
}
