package policy

import (
	"slices"
	"time"
)

// LockRule is one lock rule as it is given to [NewRules] (package config
// builds it from the file's locks list). Empty enum fields mean the
// defaults noted on each field.
type LockRule struct {
	// Pattern is a Valkey glob (see [Compile]); required.
	Pattern      string
	Release      ReleaseMode      // default rewrite
	Session      SessionMode      // default connection
	UnknownOwner UnknownOwnerMode // default refuse
	Scripts      ScriptsMode      // "" = default by script class
	UnknownSHA   UnknownSHAMode   // default allow
	Fence        *FenceConfig     // nil: no fencing
	// Durability: acquisitions answered only once that many replicas have
	// them (docs/failover.md); nil (the default) answers at once.
	Durability *DurabilityConfig
	// MaxLease: acquisitions and lease changes that leave a longer lease (or
	// none) are refused (rewrite/lease.go), and after a change of primary
	// the rule's locks are not granted for this long (the lock delay,
	// docs/failover.md); 0 (the default): neither.
	MaxLease time.Duration
}

// DurabilityConfig is a lock rule's durability section: an acquisition is
// answered only after Replicas replicas acknowledged it (WAIT), and is
// undone, and answered as not taken, when they do not within Timeout.
type DurabilityConfig struct {
	Replicas int
	Timeout  time.Duration
}

// FenceConfig is a lock rule's fencing section as written; [Fencing] is
// what it compiles to.
type FenceConfig struct {
	Counter        string         // key template of the fencing counter; required
	Guards         []string       // key templates of the keys the lock guards
	Check          FenceCheck     // default current
	UnfencedWrites UnfencedWrites // default reject
	// Mark: where check: highest keeps the highest token accepted: one
	// mark per lock (every key the lock guards refuses a token below the
	// highest any of them accepted), or one per guarded key.
	Mark FenceMark // default lock
}

// WithDefaults returns a copy of r, sharing nothing with it, whose empty
// enum fields hold their defaults and whose empty guard list is nil.
func (r LockRule) WithDefaults() LockRule {
	r = r.clone()
	setZero(&r.Release, ReleaseRewrite)
	setZero(&r.Session, SessionConnection)
	setZero(&r.UnknownOwner, UnknownOwnerRefuse)
	setZero(&r.UnknownSHA, UnknownSHAAllow)
	if f := r.Fence; f != nil {
		if len(f.Guards) == 0 {
			f.Guards = nil
		}
		setZero(&f.Check, FenceCheckCurrent)
		setZero(&f.Mark, FenceMarkLock)
		setZero(&f.UnfencedWrites, UnfencedReject)
	}
	return r
}

func (r LockRule) clone() LockRule {
	if r.Durability != nil {
		d := *r.Durability
		r.Durability = &d
	}
	if r.Fence != nil {
		f := *r.Fence
		f.Guards = slices.Clone(f.Guards)
		r.Fence = &f
	}
	return r
}

func setZero[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}
