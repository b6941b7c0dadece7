package rewrite

import (
	"github.com/lockproxy/lockproxy/policy"
)

// fence plans a command that touches no lock key but may write keys a lock
// guards. Reads are never fenced. A write from a client holding a grant of
// the guarding lock runs inside the Fenced script with that grant's number
// as its token; from a client holding none, it follows unfenced_writes.
func (d *Decider) fence(args [][]byte, keys []touch, s Session) Plan {
	var checks []fenceCheck
	var effects []Effect
	all := d.Rules.All()
	for _, k := range keys {
		if !k.flags.Writes() {
			continue
		}
		key := k.key
		for i := range all {
			r := &all[i]
			f := r.Fencing
			if f == nil || !f.MayGuard(key) {
				continue
			}
			owner := s.Owner(r)
			lock, token, ok := guardingGrant(s.Held(owner), r, key)
			if !ok {
				name := upper(args[0])
				switch f.UnfencedWrites {
				case policy.UnfencedReject:
					reason := errUnfenced(name, key, r)
					return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: name, Key: clone(key), Rule: r, Owner: owner, Reason: reason}}}
				case policy.UnfencedObserve:
					effects = append(effects, Effect{Kind: Unfenced, Command: name, Key: clone(key), Rule: r, Owner: owner})
				}
				break
			}
			counter := f.CounterKey(r, lock)
			checks = append(checks, fenceCheck{
				counter: counter,
				high:    append(append([]byte(nil), counter...), ":high"...),
				token:   token, mode: string(f.Check), key: key, lock: lock, rule: r, owner: owner,
			})
			break // the first rule that guards the key decides
		}
	}
	if len(checks) == 0 {
		return Plan{Effects: effects}
	}
	skeys := make([][]byte, 0, 2*len(checks)+len(keys))
	sargs := make([][]byte, 0, 1+3*len(checks)+len(args))
	sargs = append(sargs, itoa(int64(len(checks))))
	for _, c := range checks {
		skeys = append(skeys, c.counter, c.high)
		sargs = append(sargs, itoa(c.token), []byte(c.mode), c.key)
		effects = append(effects, Effect{Kind: FencedWrite, Command: upper(args[0]), Key: clone(c.key),
			Rule: c.rule, Owner: c.owner, Grant: c.token, Value: clone(c.lock)})
	}
	for _, k := range keys {
		skeys = append(skeys, k.key)
	}
	sargs = append(sargs, args...)
	return Plan{Kind: Run, Script: Fenced, Keys: skeys, Args: sargs, Effects: effects}
}

type fenceCheck struct {
	counter, high []byte
	token         int64
	mode          string
	key, lock     []byte
	rule          *policy.Rule
	owner         string
}

// guardingGrant finds, among a session's grants, the newest one of a lock of
// rule r that guards key.
func guardingGrant(held []Held, r *policy.Rule, key []byte) (lock []byte, token int64, ok bool) {
	for _, h := range held {
		if h.Number > token && r.Pattern.Match(h.Key) && r.Fencing.GuardsKey(r, h.Key, key) {
			lock, token, ok = h.Key, h.Number, true
		}
	}
	return lock, token, ok
}

func upper(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return string(out)
}

func errUnfenced(cmd string, key []byte, r *policy.Rule) string {
	return "UNFENCED lockproxy refused " + cmd + " on " + quoteKey(key) + " (" + ruleName(r) +
		", unfenced_writes: reject): the key is guarded by a lock and this client holds no grant of it; acquire the lock (SET <lock> <token> NX PX <ms>) before writing, or set unfenced_writes: allow"
}
