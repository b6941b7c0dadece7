package rewrite

import (
	"github.com/lockproxy/lockproxy/policy"
)

// fence plans a command that touches no lock key but may write keys a lock
// guards. Reads are never fenced. Whether the writer holds a grant of a
// lock guarding the key, and with which token, is in the lock's owner
// records, in Valkey: the write runs inside the Fenced script, which looks
// the writer up among the records of every lock that can guard the key
// (policy.Fencing.GuardingLocks), checks its token, and applies
// unfenced_writes to a writer with none.
func (d *Decider) fence(args [][]byte, keys []touch, s Session) Plan {
	type check struct {
		rule  *policy.Rule
		key   []byte
		locks [][]byte
	}
	var checks []check
	all := d.Rules.All()
	for _, k := range keys {
		if !k.flags.Writes() {
			continue
		}
		for i := range all {
			r := &all[i]
			f := r.Fencing
			if f == nil || !f.MayGuard(k.key) {
				continue
			}
			if locks := f.GuardingLocks(r, k.key); len(locks) > 0 {
				checks = append(checks, check{rule: r, key: k.key, locks: locks})
				break // the first rule that guards the key decides
			}
		}
	}
	if len(checks) == 0 {
		return Plan{}
	}
	// One owner per write: the fenced rules of one command share the
	// session scope of the first (a command writing keys of locks with
	// different scopes is checked as the first's owner).
	owner := s.Owner(checks[0].rule)
	name := upper(args[0])
	var skeys [][]byte
	sargs := make([][]byte, 0, 3+4*len(checks)+len(args))
	sargs = append(sargs, []byte(owner), itoa(int64(s.Proto())), itoa(int64(len(checks))))
	effects := make([]Effect, 0, len(checks))
	for _, c := range checks {
		f := c.rule.Fencing
		for _, lock := range c.locks {
			counter := f.CounterKey(c.rule, lock)
			skeys = append(skeys, counter, RecordsKey(lock), append(append([]byte(nil), counter...), policy.HighSuffix...))
		}
		sargs = append(sargs, itoa(int64(len(c.locks))), []byte(f.Check), []byte(f.UnfencedWrites), c.key)
		effects = append(effects, Effect{Kind: FencedWrite, Command: name, Key: clone(c.key), Rule: c.rule, Owner: owner})
	}
	for _, k := range keys {
		skeys = append(skeys, k.key)
	}
	sargs = append(sargs, args...)
	return Plan{Kind: Run, Script: Fenced, Keys: skeys, Args: sargs, Shape: FencedReply, Effects: effects}
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
