package policy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lockproxy/lockproxy/cluster"
)

// clusterLocks checks, in front of a cluster, that each rule's locks
// can keep their state beside them: a lock script touches the lock, its
// grant counter (or fence counter and its mark) and its owner records at
// once, and a cluster runs a script only when all its keys hash to one
// slot; a fenced write checks the guarded key against those records in one
// script too.
//
// The rule's sample key stands for the keys its pattern is written for (each
// wildcard filled with brace-free text). A key whose wildcards themselves
// hold a '}' outside a hash tag (a}b:lock under *:lock) may still fail; the
// proxy refuses such a key at first use, with the same reason (CROSSSLOT).
func (c *checker) clusterLocks(locks []LockRule, pats []*Pattern) {
	for i, r := range locks {
		pat := pats[i]
		if pat == nil {
			continue
		}
		p := fmt.Sprintf("locks[%d]", i)
		lock := sample(pat.src)
		if !recordsShareSlot(lock) {
			c.errf(p+".pattern", "%s: in a cluster the lock records of its keys (e.g. %q) cannot share the key's hash slot: the key has a '}' and no hash tag before it, so lockproxy would refuse every lock of this rule (CROSSSLOT); put the name in a hash tag, e.g. %q",
				strconv.Quote(pat.src), lock, suggestTag(pat.src))
			continue
		}
		if r.Fence == nil || r.Fence.Counter == "" {
			continue
		}
		f, err := compileFence(pat, r.Fence)
		if err != nil {
			continue // reported by locks
		}
		rule := &Rule{Pattern: pat}
		base := rule.FenceBase([]byte(lock))
		slot := cluster.Slot([]byte(lock))
		counter := string(f.Counter.Expand(nil, []byte(lock), base, false))
		for _, k := range []string{counter, counter + HighSuffix} {
			if cluster.Slot([]byte(k)) != slot {
				c.errf(p+".fence.counter", "%q puts the fence counter of lock %q at %q, in another hash slot (%d, the lock's is %d): a cluster cannot run lockproxy's lock script over both; give the lock a hash tag (\"{*}:lock\") and start the counter with {base}, or wrap the key: \"{{key}}:fence\"",
					r.Fence.Counter, lock, k, cluster.Slot([]byte(k)), slot)
				break
			}
		}
		for j, g := range f.Guards {
			glob := string(g.Expand(nil, []byte(lock), base, true))
			if gslot, one := globSlot(glob); !one || gslot != slot {
				where := "keys in many hash slots"
				if one {
					where = fmt.Sprintf("keys in hash slot %d", gslot)
				}
				c.errf(fmt.Sprintf("%s.fence.guards[%d]", p, j), "%q guards, for lock %q, %s (%q), and the lock is in slot %d: a cluster cannot check a guarded key against the lock's records in one script; keep guards in the lock's hash tag, e.g. \"{base}:*\" with a pattern like \"{*}:lock\", or wrap the key: \"{{key}}:*\"",
					g.src, lock, where, glob, slot)
			}
		}
	}
}

// recordsShareSlot reports whether a lock key's grant counter and owner
// records can be put in its slot (see rewrite.CounterKey): the key has a
// hash tag, which they keep, or no '}' at all, so that wrapping it in braces
// makes the whole key their tag. An empty key has neither.
func recordsShareSlot(key string) bool {
	return hashTag(key) != "" || (key != "" && !strings.Contains(key, "}"))
}

// globSlot returns the one hash slot of every key a glob matches: the glob
// is literal, or its literal beginning holds a complete hash tag. one is
// false when the keys it matches can be in more than one slot.
func globSlot(glob string) (slot uint16, one bool) {
	p := CompileAny(glob)
	if p.IsLiteral() {
		return cluster.Slot([]byte(p.prefix)), true
	}
	if tag := hashTag(p.prefix); tag != "" {
		return cluster.Slot([]byte("{" + tag + "}")), true
	}
	return 0, false
}

// suggestTag proposes the pattern with its text before the first '}' in a
// hash tag, the usual fix.
func suggestTag(src string) string {
	name, rest, _ := strings.Cut(src, "}")
	name = strings.Trim(name, "{")
	if name == "" {
		name = "*"
	}
	return "{" + name + "}" + rest
}
