package locks

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Durable grants (a rule's durability: {replicas: N, timeout: D}, issue
// 29). An acquisition runs as usual, with its reply held back; a WAIT N D
// follows it on the same upstream connection, so that it counts the
// replicas that acknowledged that connection's writes up to and including
// the acquisition. With N acknowledgements the client gets the
// acquisition's reply. With fewer, the grant is undone (undoGrantScript:
// the lock deleted only while it still holds this grant, and the owner's
// record of it) and the client gets the answer of a lock someone else
// holds: nil for SET ... NX, :0 for SETNX; SET ... NX GET, whose "not
// taken" would have to name a holder's value, gets a NOTDURABLE error.
//
// The proxy sends the command and its WAIT; the hooks here pair their
// replies and answer the client from both.

// undoGrantScript deletes a grant that its replicas did not acknowledge:
// KEYS lock, counter, records; ARGV owner, grant, value. Only while the
// counter still says that grant and the lock that value is the lock
// deleted: a later grant is never touched.
const undoGrantScript = `if redis.call('GET', KEYS[2]) == ARGV[2] and redis.call('GET', KEYS[1]) == ARGV[3] then redis.call('DEL', KEYS[1]) end
local r = redis.call('HGET', KEYS[3], ARGV[1])
if r and string.match(r, '^(%d+) ') == ARGV[2] then redis.call('HDEL', KEYS[3], ARGV[1]) end
return 1`

// Durability returns the durability a plan runs under: its acquisition's
// or lease change's rule's (Acquire, Holder), or, for a fenced write, the
// strictest of its guarding locks' rules; nil when it answers at once.
func Durability(plan rewrite.Plan) *policy.DurabilityConfig {
	switch plan.Script {
	case rewrite.Acquire, rewrite.Holder:
		if len(plan.Effects) > 0 && plan.Effects[0].Rule != nil {
			return plan.Effects[0].Rule.Durability
		}
	case rewrite.Fenced:
		var d *policy.DurabilityConfig
		for _, e := range plan.Effects {
			if e.Kind == rewrite.FencedWrite && e.Rule != nil && e.Rule.Durability != nil &&
				(d == nil || e.Rule.Durability.Replicas > d.Replicas) {
				d = e.Rule.Durability
			}
		}
		return d
	}
	return nil
}

// WaitCommand is the WAIT that follows a durable command.
func WaitCommand(d *policy.DurabilityConfig) []byte {
	return resp.AppendCommandStrings(nil, "WAIT", strconv.Itoa(d.Replicas), strconv.FormatInt(d.Timeout.Milliseconds(), 10))
}

// WriteWait pairs a renewal (Holder) or a fenced write with its WAIT:
// onScript is the script's reply hook, onWait the WAIT's, which answers
// the client. With N acknowledgements the client gets the command's reply;
// with fewer, NOTDURABLE (the change was made on the primary, as a WAIT
// that comes back short says; it may not survive a failover). A WAIT
// answered before the script (in front of a cluster the script may have
// been redirected to another node) cannot vouch for it: NOTDURABLE too.
func (k *Keeper) WriteWait(c Client, plan rewrite.Plan, d *policy.DurabilityConfig, proto int) (onScript, onWait func([]byte) []byte) {
	effects, shape, sc := plan.Effects, plan.Shape, plan.Script
	key := ""
	if len(effects) > 0 {
		key = string(effects[0].Key)
	}
	var mu sync.Mutex
	var folded []byte
	onScript = func(reply []byte) []byte {
		// Kept until the WAIT's reply, which may come in a later read:
		// a copy, since Fold may answer a slice of the connection's read
		// buffer, which later replies overwrite.
		f := bytes.Clone(rewrite.Fold(shape, effects, sc.Unwrap(reply), proto))
		mu.Lock()
		folded = f
		mu.Unlock()
		return reply
	}
	onWait = func(reply []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		acked, ok := resp.ReplyInt(reply)
		if folded != nil {
			k.Apply(c, effects, folded)
			if folded[0] == '-' || ok && acked >= int64(d.Replicas) {
				return folded
			}
		}
		k.Short.Add(1)
		return resp.AppendError(nil, errNotDurableWrite(key, d))
	}
	return onScript, onWait
}

// AcquireWait pairs an acquisition with its WAIT (see above): onScript is
// the script's reply hook, onWait the WAIT's, which answers the client. A
// WAIT answered before the acquisition's script (in front of a cluster the
// script may have been redirected to another node) cannot vouch for it:
// the client is answered "not taken", and the grant, if the script made
// one, is undone when its reply comes. db is the database it runs in.
func (k *Keeper) AcquireWait(c Client, plan rewrite.Plan, d *policy.DurabilityConfig, db, proto int) (onScript, onWait func([]byte) []byte) {
	a := k.Acquisition(c, plan, d, db, proto)
	var mu sync.Mutex
	var folded []byte
	waited := false
	onScript = func(reply []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		folded = bytes.Clone(rewrite.Fold(a.shape, a.effects, plan.Script.Unwrap(reply), a.proto)) // kept past this read, as above
		if waited && a.effects[0].Grant > 0 {
			a.undo(a.effects[0].Grant, -1)
		}
		return reply
	}
	onWait = func(reply []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		waited = true
		acked, ok := resp.ReplyInt(reply)
		if !ok {
			acked = -1
		}
		return a.answer(folded, acked)
	}
	return onScript, onWait
}

// Acq is an acquisition under a durability rule, as its answer needs it
// once its WAIT is answered (AcquireWait; in a transaction, TxnAcquire).
type Acq struct {
	k       *Keeper
	c       Client
	effects []rewrite.Effect
	shape   rewrite.Shape
	keys    []string // copied: the plan's alias the command's arguments
	owner   string
	db      int
	proto   int
	d       *policy.DurabilityConfig
}

// Acquisition is plan's acquisition by c in database db, under d.
func (k *Keeper) Acquisition(c Client, plan rewrite.Plan, d *policy.DurabilityConfig, db, proto int) *Acq {
	keys := make([]string, len(plan.Keys))
	for i, key := range plan.Keys {
		keys[i] = string(key)
	}
	return &Acq{k: k, c: c, effects: plan.Effects, shape: plan.Shape, keys: keys,
		owner: plan.Effects[0].Owner, db: db, proto: proto, d: d}
}

// answer is the client's answer, from the acquisition's folded reply (nil:
// not seen before its WAIT's) and the replicas its WAIT counted (acked;
// -1: no count): the reply, recorded, when it took nothing or enough
// replicas acknowledged it; else "not taken", the grant undone (off the
// reply path).
func (a *Acq) answer(folded []byte, acked int64) []byte {
	grant := a.effects[0].Grant
	if folded != nil && (grant == 0 || acked >= int64(a.d.Replicas)) {
		a.k.Apply(a.c, a.effects, folded)
		return folded
	}
	if folded != nil {
		a.undo(grant, acked)
	}
	a.effects[0].Grant = 0
	a.k.Apply(a.c, a.effects, nil)
	return notTaken(a.shape, a.keys[0], a.d, a.proto)
}

// undo undoes grant in the acquisition's database.
func (a *Acq) undo(grant, acked int64) {
	a.k.undoGrantLater(a.keys, a.db, a.owner, grant, string(a.effects[0].Value), a.d, acked)
}

// notTaken is the answer to an acquisition of shape that was not made
// durable: that of a lock someone else holds (nil, :0 for SETNX), or
// NOTDURABLE for SET ... NX GET.
func notTaken(shape rewrite.Shape, key string, d *policy.DurabilityConfig, proto int) []byte {
	switch shape {
	case rewrite.SetNXReply:
		return resp.AppendInt(nil, 0)
	case rewrite.AcquireGetReply:
		return resp.AppendError(nil, errNotDurable(key, d))
	}
	return resp.AppendNull(nil, proto)
}

// undoGrantLater undoes a grant its replicas did not acknowledge (acked of
// d.Replicas; -1: the WAIT did not vouch for it) off the reply path, and
// counts and logs it.
func (k *Keeper) undoGrantLater(keys []string, db int, owner string, grant int64, value string, d *policy.DurabilityConfig, acked int64) {
	k.Undone.Add(1)
	k.log.Warn("an acquisition was not acknowledged by enough replicas in time: undone, answered as not taken",
		"key", keys[0], "replicas", d.Replicas, "acknowledged", acked, "timeout", d.Timeout)
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.undoGrant(keys, db, owner, grant, value)
	}()
}

// undoGrant runs undoGrantScript (Host.Eval: within the dial timeout).
func (k *Keeper) undoGrant(keys []string, db int, owner string, grant int64, value string) {
	if _, err := k.host.Eval([]byte(keys[0]), db, undoGrantScript, keys, owner, strconv.FormatInt(grant, 10), value); err != nil {
		k.log.Warn("could not undo an acquisition its replicas did not acknowledge", "key", keys[0], "error", err)
	}
}
