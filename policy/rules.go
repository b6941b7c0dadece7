package policy

import (
	"fmt"
	"time"
)

// Rule is one compiled lock rule: the decision the proxy applies to a key
// its pattern matches. Enum fields always hold a valid value (defaults
// applied), except Scripts, where ScriptsDefault ("") means "decide by script
// class".
type Rule struct {
	Index        int // position in the config's locks list, for logs and metrics
	Pattern      *Pattern
	Release      ReleaseMode
	Session      SessionMode
	UnknownOwner UnknownOwnerMode
	Scripts      ScriptsMode
	UnknownSHA   UnknownSHAMode
	Fence        *FenceConfig      // nil when the rule has no fence section
	Fencing      *Fencing          // the fence section compiled; nil without one
	Durability   *DurabilityConfig // nil: acquisitions are answered at once
	MaxLease     time.Duration     // 0: no limit on leases, no lock delay
}

// Rules is the ordered set of lock rules. It is immutable after NewRules and
// safe for concurrent use. A nil *Rules has no rules.
type Rules struct {
	fenced bool // some rule has a fence section
	rules  []Rule
	// quick holds, parallel to rules, what each pattern fixes about a key,
	// packed densely so the loop in match rejects most rules with a length
	// and a byte compare without calling into the pattern.
	quick  []quickCheck
	minLen int // shortest key any rule can match

	// byteFilter lets Match turn away most non-lock keys with one bit test:
	// when every rule's pattern fixes the key's last byte (as "*:lock" fixes
	// 'k'), or else every rule fixes the first byte (as "lock:*" fixes 'l'),
	// a key whose byte is in no rule's set matches nothing.
	filter    filterKind
	byteSet   [4]uint64 // bit b set: some rule allows byte b in the filtered position
	emptyRule *Rule     // the first rule matching the empty key, which has no first or last byte
}

type quickCheck struct {
	minLen      int
	first, last int16 // -1: not fixed
}

type filterKind uint8

const (
	filterNone filterKind = iota
	filterLast
	filterFirst
)

// NewRules compiles the lock rules, in order. Empty enum fields take their
// defaults. It checks the rules as [Check] does (without the cluster's
// checks) and returns every problem found, each a [*RuleError] naming the
// rule by index (locks[i]).
func NewRules(locks []LockRule) (*Rules, error) {
	rs := withDefaults(locks)
	c := &checker{}
	pats := c.locks(rs)
	if err := c.err(); err != nil {
		return nil, err
	}
	r := &Rules{rules: make([]Rule, len(rs))}
	for i, l := range rs {
		r.rules[i] = Rule{
			Index:        i,
			Pattern:      pats[i],
			Release:      l.Release,
			Session:      l.Session,
			UnknownOwner: l.UnknownOwner,
			Scripts:      l.Scripts,
			UnknownSHA:   l.UnknownSHA,
			Fence:        l.Fence,
			Durability:   l.Durability,
			MaxLease:     l.MaxLease,
		}
		if l.Fence != nil {
			f, err := compileFence(pats[i], l.Fence)
			if err != nil {
				return nil, fmt.Errorf("locks[%d].fence: %v", i, err)
			}
			r.rules[i].Fencing = f
			r.fenced = true
		}
	}
	r.buildFilter()
	return r, nil
}

func (r *Rules) buildQuick() {
	r.quick = make([]quickCheck, len(r.rules))
	r.minLen = -1
	for i, rule := range r.rules {
		p := rule.Pattern
		r.quick[i] = quickCheck{minLen: p.minLen, first: int16(p.first), last: int16(p.last)}
		if r.minLen < 0 || p.minLen < r.minLen {
			r.minLen = p.minLen
		}
	}
}

func (r *Rules) buildFilter() {
	r.buildQuick()
	for i := range r.rules {
		if r.rules[i].Pattern.Match(nil) {
			r.emptyRule = &r.rules[i]
			break
		}
	}
	if len(r.rules) == 0 {
		return
	}
	lastOK, firstOK := true, true
	for _, rule := range r.rules {
		lastOK = lastOK && rule.Pattern.last >= 0
		firstOK = firstOK && rule.Pattern.first >= 0
	}
	switch {
	case lastOK:
		r.filter = filterLast
		for _, rule := range r.rules {
			b := rule.Pattern.last
			r.byteSet[b>>6] |= 1 << (b & 63)
		}
	case firstOK:
		r.filter = filterFirst
		for _, rule := range r.rules {
			b := rule.Pattern.first
			r.byteSet[b>>6] |= 1 << (b & 63)
		}
	}
}

// Len returns the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

// All returns the rules in order. The Rules keep ownership; do not modify.
func (r *Rules) All() []Rule {
	if r == nil {
		return nil
	}
	return r.rules
}

// Match returns the first rule whose pattern matches key, or nil: a key no
// rule matches is not a lock and the proxy must leave it alone. It runs for
// every key of every command, so it never allocates, and it is small enough
// to be inlined: with no rules it costs the caller a nil and a length check.
func (r *Rules) Match(key []byte) *Rule {
	if r == nil || len(r.rules) == 0 {
		return nil
	}
	return r.match(key)
}

func (r *Rules) match(key []byte) *Rule {
	if len(key) == 0 {
		return r.emptyRule
	}
	if len(key) < r.minLen {
		return nil
	}
	switch r.filter {
	case filterLast:
		b := key[len(key)-1]
		if r.byteSet[b>>6]&(1<<(b&63)) == 0 {
			return nil
		}
	case filterFirst:
		b := key[0]
		if r.byteSet[b>>6]&(1<<(b&63)) == 0 {
			return nil
		}
	}
	first, last := int16(key[0]), int16(key[len(key)-1])
	for i, q := range r.quick {
		if len(key) < q.minLen || q.first >= 0 && q.first != first || q.last >= 0 && q.last != last {
			continue
		}
		if r.rules[i].Pattern.Match(key) {
			return &r.rules[i]
		}
	}
	return nil
}

// Fenced reports whether any rule has a fence section: only then must writes
// to non-lock keys be checked against guard templates.
func (r *Rules) Fenced() bool { return r != nil && r.fenced }
