package locks

import (
	"bytes"
	"sync"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// Durable transactions (issue 29): commands and scripts queued in MULTI
// under a rule's durability. Nothing queued runs before EXEC, so one WAIT
// follows EXEC for all of them, sent right behind it on the session's own
// connection (it counts the replicas that acknowledged the transaction's
// writes), with the largest N and D of the transaction's durable commands.
// EXEC's reply is held back until the WAIT's, and each durable element is
// then answered as its plain form is (durable.go, durable_script.go): with
// its rule's N acknowledged, as Valkey answered; with fewer, an acquisition
// is undone (token-checked) and answered "not taken" (nil, :0; NOTDURABLE
// for SET NX GET), a renewal or fenced write answers NOTDURABLE, and a
// client's script NOTDURABLE, the grants it minted undone: the MGET of
// their counters is queued just before it (its QUEUED and its element of
// EXEC's reply are not the client's). Other elements are left as they are.
// A transaction that did not run (EXECABORT, nil after a WATCH) undoes
// nothing and its reply passes as it is; its WAIT still went (it was sent
// before EXEC's reply came) and waits for the connection's earlier writes.

// Txn is a transaction's durability, as its queued commands ask.
type Txn struct {
	wait policy.DurabilityConfig // the largest N and D queued
	// acked is the WAIT's answer (-1: not a count), set by its reader
	// before the elements are shaped, on that reader.
	acked int64
	// Hidden: the commands lockproxy queued (the counters' MGETs), not
	// counted in CLIENT LIST's multi=.
	Hidden int
}

// Raise raises the transaction's durability to d.
func (t *Txn) Raise(d *policy.DurabilityConfig) {
	t.wait.Replicas = max(t.wait.Replicas, d.Replicas)
	t.wait.Timeout = max(t.wait.Timeout, d.Timeout)
}

// TxnWrite is the element hook of a renewal or fenced write queued in tx
// under d: hook's answer (run's, which folds and records it), or
// NOTDURABLE when too few replicas acknowledged the transaction.
func (k *Keeper) TxnWrite(tx *Txn, plan rewrite.Plan, d *policy.DurabilityConfig, hook func([]byte) []byte) func([]byte) []byte {
	key := ""
	if len(plan.Effects) > 0 {
		key = string(plan.Effects[0].Key)
	}
	return func(el []byte) []byte {
		out := hook(el)
		if len(out) > 0 && out[0] == '-' || tx.acked >= int64(d.Replicas) {
			return out
		}
		k.Short.Add(1)
		return resp.AppendError(nil, errNotDurableWrite(key, d))
	}
}

// TxnAcquire is the element hook of c's acquisition queued in tx under d,
// in database db unless a SELECT in the transaction switched it (execDB
// returns the database EXEC ran it in, given db).
func (k *Keeper) TxnAcquire(c Client, plan rewrite.Plan, d *policy.DurabilityConfig, tx *Txn, db, proto int, execDB func(int) int) func([]byte) []byte {
	a, sc := k.Acquisition(c, plan, d, db, proto), plan.Script
	return func(el []byte) []byte {
		a.db = execDB(a.db)
		return a.answer(rewrite.Fold(a.shape, a.effects, sc.Unwrap(el), a.proto), tx.acked)
	}
}

// TxnScript is the hooks of a client's script queued in tx under its
// durable rule: onCounters the hook of the read of its locks' counters
// queued just before it (CountersRead; nil when there are none: nothing
// to queue), onEl its element's, which shapes it with hook. db and execDB
// are as TxnAcquire's.
func (k *Keeper) TxnScript(plan rewrite.Plan, locks [][]byte, tx *Txn, db int, execDB func(int) int, hook func([]byte) []byte) (onCounters, onEl func([]byte) []byte) {
	d := plan.Durable
	var before []int64 // nil: not read; set and read by EXEC's reader
	if len(locks) > 0 {
		n := len(locks) / 4
		onCounters = func(el []byte) []byte {
			before = counters(el, n)
			return nil // not the client's
		}
		tx.Hidden++
	}
	key := scriptKey(plan, locks)
	onEl = func(el []byte) []byte {
		out := hook(el)
		if tx.acked >= int64(d.Replicas) {
			return out
		}
		k.Short.Add(1)
		k.undoScriptGrantsLater(locks, before, execDB(db))
		return resp.AppendError(nil, errNotDurableScript(key, d))
	}
	return onCounters, onEl
}

// ExecWait pairs EXEC of a durable transaction with its WAIT, which
// answers the client: shape (the proxy's, which folds each element) folds
// EXEC's reply once the WAIT's answer is in tx. The WAIT to send is
// tx.WaitCommand().
func ExecWait(tx *Txn, shape func([]byte) []byte) (onExec, onWait func([]byte) []byte) {
	var mu sync.Mutex
	var reply []byte
	d := tx.wait
	onExec = func(r []byte) []byte {
		c := bytes.Clone(r) // kept past this read (WriteWait)
		mu.Lock()
		reply = c
		mu.Unlock()
		return r
	}
	onWait = func(w []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if reply == nil {
			// Both replies come on one connection, EXEC's first: not
			// seen, so nothing to answer from.
			return resp.AppendError(nil, errNotDurableTxn(&d))
		}
		tx.acked = -1
		if n, ok := resp.ReplyInt(w); ok {
			tx.acked = n
		}
		return shape(reply)
	}
	return onExec, onWait
}

// WaitCommand is the WAIT that follows the transaction's EXEC.
func (t *Txn) WaitCommand() []byte { return WaitCommand(&t.wait) }
