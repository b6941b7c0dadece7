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
	fc := d.fenceChecks(upper(args[0]), keys, s, itoa(int64(s.Proto())))
	if fc == nil {
		return Plan{}
	}
	skeys := fc.keys
	for _, k := range keys {
		skeys = append(skeys, k.key)
	}
	return Plan{Kind: Run, Script: Fenced, Keys: skeys, Args: append(fc.args, args...), Shape: FencedReply, Effects: fc.effects}
}

func refuseBlocking(name string, key []byte) Plan {
	reason := errFencedBlocking(name, key)
	return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: name, Key: clone(key), Reason: reason}}}
}

// fenceCheck is the fence of a write, as the fence function of the
// scripts takes it (see Fenced): per candidate lock its counter, records
// and marks in keys; the owner, (the client's protocol,) the number of
// checks and each check in args; a FencedWrite effect per check, in order.
type fenceCheck struct {
	keys, args [][]byte
	effects    []Effect
}

// fenceChecks lists the checks the writes among keys must pass; nil when
// no key written is guarded. name is the command, for the effects; proto,
// when set, goes after the owner (the Fenced script's ARGV[2]).
func (d *Decider) fenceChecks(name string, keys []touch, s Session, proto []byte) *fenceCheck {
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
		return nil
	}
	// One owner per write: the fenced rules of one command share the
	// session scope of the first (a command writing keys of locks with
	// different scopes is checked as the first's owner).
	owner := s.Owner(checks[0].rule)
	fc := &fenceCheck{
		args:    make([][]byte, 0, 3+4*len(checks)+len(keys)+2),
		effects: make([]Effect, 0, len(checks)),
	}
	fc.args = append(fc.args, []byte(owner))
	if proto != nil {
		fc.args = append(fc.args, proto)
	}
	fc.args = append(fc.args, itoa(int64(len(checks))))
	for _, c := range checks {
		f := c.rule.Fencing
		for _, lock := range c.locks {
			counter := f.CounterKey(c.rule, lock)
			fc.keys = append(fc.keys, counter, RecordsKey(lock), append(append([]byte(nil), counter...), policy.HighSuffix...))
		}
		fc.args = append(fc.args, itoa(int64(len(c.locks))), checkMode(f), []byte(f.UnfencedWrites), c.key)
		fc.effects = append(fc.effects, Effect{Kind: FencedWrite, Command: name, Key: clone(c.key), Rule: c.rule, Owner: owner})
	}
	return fc
}

// checkMode is a fence's check as the scripts take it.
func checkMode(f *policy.Fencing) []byte {
	switch {
	case f.Check == policy.FenceCheckCurrent:
		return modeCurrent
	case f.Mark == policy.FenceMarkKey:
		return modeHighestKey
	}
	return modeHighestLock
}

var (
	modeCurrent     = []byte("current")
	modeHighestKey  = []byte("highest")
	modeHighestLock = []byte("highest-lock")
)

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
