package config

import (
	"slices"

	"github.com/lockproxy/lockproxy/policy"
)

// LockRule is one entry of the locks list, as written in the file. Empty
// enum fields mean the defaults noted on each field. What the settings
// mean is package policy's: [LockRule.Policy] gives the rule as
// policy.NewRules takes it.
type LockRule struct {
	// Pattern is a Valkey glob (see policy.Compile); required.
	Pattern      string                  `yaml:"pattern"`
	Release      policy.ReleaseMode      `yaml:"release"`       // default rewrite
	Session      policy.SessionMode      `yaml:"session"`       // default connection
	UnknownOwner policy.UnknownOwnerMode `yaml:"unknown_owner"` // default refuse
	Scripts      policy.ScriptsMode      `yaml:"scripts"`       // "" = default by script class
	UnknownSHA   policy.UnknownSHAMode   `yaml:"unknown_sha"`   // default allow
	Fence        *FenceConfig            `yaml:"fence,omitempty"`
	// Durability: acquisitions answered only once that many replicas have
	// them (docs/failover.md); nil (the default) answers at once.
	Durability *DurabilityConfig `yaml:"durability,omitempty"`
	// MaxLease: acquisitions and lease changes that leave a longer lease (or
	// none) are refused (rewrite/lease.go), and
	// after a change of primary the rule's locks are not granted for this
	// long (the lock delay, docs/failover.md); 0 (the default): neither.
	MaxLease Duration `yaml:"max_lease"`
}

// DurabilityConfig is a lock rule's durability section (see
// policy.DurabilityConfig).
type DurabilityConfig struct {
	Replicas int      `yaml:"replicas"`
	Timeout  Duration `yaml:"timeout"`
}

// FenceConfig is a lock rule's optional fencing section (see
// policy.FenceConfig, whose fields it has, in the same order).
type FenceConfig struct {
	Counter        string                `yaml:"counter"`         // key template of the fencing counter; required
	Guards         []string              `yaml:"guards"`          // key templates of the keys the lock guards
	Check          policy.FenceCheck     `yaml:"check"`           // default current
	UnfencedWrites policy.UnfencedWrites `yaml:"unfenced_writes"` // default reject
	// Mark: where check: highest keeps the highest token accepted: one
	// mark per lock (every key the lock guards refuses a token below the
	// highest any of them accepted), or one per guarded key.
	Mark policy.FenceMark `yaml:"mark"` // default lock
}

// Policy returns the rule as package policy takes it, sharing nothing with
// r.
func (r LockRule) Policy() policy.LockRule {
	p := policy.LockRule{
		Pattern:      r.Pattern,
		Release:      r.Release,
		Session:      r.Session,
		UnknownOwner: r.UnknownOwner,
		Scripts:      r.Scripts,
		UnknownSHA:   r.UnknownSHA,
		MaxLease:     r.MaxLease.D(),
	}
	if r.Fence != nil {
		f := policy.FenceConfig(*r.Fence)
		f.Guards = slices.Clone(f.Guards)
		p.Fence = &f
	}
	if r.Durability != nil {
		p.Durability = &policy.DurabilityConfig{Replicas: r.Durability.Replicas, Timeout: r.Durability.Timeout.D()}
	}
	return p
}

// Rules compiles the lock rules (policy.NewRules).
func (c *Config) Rules() (*policy.Rules, error) {
	return policy.NewRules(c.policyLocks())
}

func (c *Config) policyLocks() []policy.LockRule {
	locks := make([]policy.LockRule, len(c.Locks))
	for i, r := range c.Locks {
		locks[i] = r.Policy()
	}
	return locks
}

// validateLocks checks the lock rules as package policy does, with the
// cluster's checks when the upstream is one, and places each problem at
// its setting's line.
func validateLocks(v *validator, c *Config) {
	for _, e := range policy.Check(c.policyLocks(), len(c.Upstream.Cluster.Seeds) > 0) {
		v.errf(e.Path, "%s", e.Msg)
	}
}

// applyDefaults writes the defaults policy gives an empty field into the
// rule, so that a marshalled Config (config show) shows them.
func (r *LockRule) applyDefaults() {
	d := r.Policy().WithDefaults()
	r.Release, r.Session, r.UnknownOwner, r.UnknownSHA = d.Release, d.Session, d.UnknownOwner, d.UnknownSHA
	if r.Fence != nil {
		*r.Fence = FenceConfig(*d.Fence)
	}
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
