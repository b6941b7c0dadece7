package rewrite

import (
	"math"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeynum"

	"github.com/lockproxy/lockproxy/policy"
)

// A rule's max_lease bounds every lease its locks are given, not only an
// acquisition's (acquireDelay): the lock delay after a change of primary
// waits max_lease, which covers a grant the change lost only if its holder
// never believed in a longer lease. So a lease change of a held lock
// (the EXPIRE family, PERSIST, GETEX with an option, the holder's SET)
// that leaves a lease longer than max_lease, or none, is refused (LEASE).
// A lease that ends at once (the lock deleted) passes.

// leaseOver reports whether the lease change args (command name upper
// case) leaves its lock a lease longer than max, or none; now is for the
// absolute forms (PEXPIREAT, EXAT, ...). An argument that is not a number
// is Valkey's to refuse: false.
func leaseOver(name string, args [][]byte, max time.Duration, now time.Time) bool {
	ms := now.UnixMilli()
	end, ok := leaseEnd(name, args, ms)
	if !ok {
		return false
	}
	return end == 0 || end-ms > max.Milliseconds()
}

// leaseEnd is when the lease a command leaves ends (ms), 0 for none; ok
// false when it leaves the lease as it is or cannot be read.
func leaseEnd(name string, args [][]byte, now int64) (end int64, ok bool) {
	num := func(i int) (int64, bool) {
		if i >= len(args) {
			return 0, false
		}
		return valkeynum.String2ll(args[i])
	}
	at := func(v int64, ok bool, unit int64, abs bool) (int64, bool) {
		if !ok || v > math.MaxInt64/unit || v < math.MinInt64/unit {
			return 0, false // Valkey's error
		}
		v *= unit
		switch {
		case abs:
			return max(v, 1), true
		case v > math.MaxInt64-now:
			// Past any max_lease; Valkey may call it an overflow, by a
			// clock that need not be this one: refused either way.
			return math.MaxInt64, true
		case v < 0:
			return 1, true // ends at once
		}
		return max(now+v, 1), true
	}
	if e, ok := expireForms[name]; ok {
		v, ok := num(2)
		return at(v, ok, e.unit, e.abs)
	}
	switch name {
	case "PERSIST":
		return 0, true
	case "SET", "GETEX":
		// As Valkey reads the options: the last expiry option is the one
		// it applies (setopts.go).
		o := parseSet(args)
		if name == "GETEX" {
			o = parseGetex(args)
		}
		switch {
		case !o.ok:
			return 0, false // Valkey's syntax error
		case o.exp > 0:
			if !o.expOK {
				return 0, false // Valkey's error
			}
			v, abs := o.expiryMS(args)
			return at(v, true, 1, abs)
		case o.persist:
			return 0, true
		case name == "SET" && !o.keepttl:
			return 0, true // a SET without an expiry leaves none
		}
	}
	return 0, false
}

// expireForms: the EXPIRE family's unit (ms) and whether its argument is
// a time rather than a length.
var expireForms = map[string]struct {
	unit int64
	abs  bool
}{"PEXPIRE": {1, false}, "EXPIRE": {1000, false}, "PEXPIREAT": {1, true}, "EXPIREAT": {1000, true}}

// leaseRefusal is the plan that refuses a lease change under r's
// max_lease (see above), or nil when it may run.
func (d *Decider) leaseRefusal(name string, args [][]byte, r *policy.Rule) *Plan {
	if r.MaxLease <= 0 || len(args) < 2 {
		return nil
	}
	now := time.Now
	if d.Clock != nil {
		now = d.Clock
	}
	if !leaseOver(name, args, r.MaxLease, now()) {
		return nil
	}
	reason := errLeaseChange(name, args[1], r.MaxLease.Milliseconds())
	return &Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: name, Key: clone(args[1]), Rule: r, Reason: reason}}}
}
