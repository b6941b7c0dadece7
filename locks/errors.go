package locks

import (
	"fmt"

	"github.com/lockproxy/lockproxy/policy"
)

// Every error reply this package writes, in one place: one upper-case
// code word, then what happened and what to do. All of them are a durable
// command's answers when too few replicas acknowledged it (issue 29).

// errNotDurable: SET ... NX GET under a rule's durability, when too few
// replicas acknowledged it in time (durable.go). Its "not taken" answer
// would have to name a holder's value, so it is this error instead.
func errNotDurable(key string, d *policy.DurabilityConfig) string {
	return fmt.Sprintf("NOTDURABLE lockproxy undid the acquisition of %q: fewer than %d replicas acknowledged it within %s (durability); the lock is not yours, retry later", key, d.Replicas, d.Timeout)
}

// errNotDurableScript: a client's script under a rule's durability that
// too few replicas acknowledged in time (durable_script.go).
func errNotDurableScript(key string, d *policy.DurabilityConfig) string {
	return fmt.Sprintf("NOTDURABLE fewer than %d replicas acknowledged the script's changes within %s (durability, lock %q): lockproxy undid every lock the script took (they are not yours), and its renewals and fenced writes were made on the primary only, where a failover may lose them; retry later", d.Replicas, d.Timeout, key)
}

// errNotDurableTxn: a durable transaction whose EXEC reply was not seen
// before its WAIT's (durable_multi.go).
func errNotDurableTxn(d *policy.DurabilityConfig) string {
	return fmt.Sprintf("NOTDURABLE lockproxy could not tell whether %d replicas acknowledged the transaction within %s (durability): its reply was lost; check the locks it took, and retry", d.Replicas, d.Timeout)
}

// errNotDurableWrite: a renewal or fenced write under a rule's durability
// that too few replicas acknowledged in time (durable.go).
func errNotDurableWrite(key string, d *policy.DurabilityConfig) string {
	return fmt.Sprintf("NOTDURABLE lockproxy made the change to %q on the primary, but fewer than %d replicas acknowledged it within %s (durability): a failover may lose it; retry, or renew the lock again", key, d.Replicas, d.Timeout)
}
