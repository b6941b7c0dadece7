package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Check returns every problem with the lock rules, in order, each naming
// its rule by index (locks[i]). Empty enum fields are taken as their
// defaults. inCluster adds the checks a rule needs in front of a Valkey
// Cluster (cluster_slots.go).
func Check(locks []LockRule, inCluster bool) []*RuleError {
	rs := withDefaults(locks)
	c := &checker{}
	pats := c.locks(rs)
	if inCluster {
		c.clusterLocks(rs, pats)
	}
	return c.errs
}

func withDefaults(locks []LockRule) []LockRule {
	rs := make([]LockRule, len(locks))
	for i, l := range locks {
		rs[i] = l.WithDefaults()
	}
	return rs
}

// locks checks the lock rules and returns their compiled patterns (nil
// where a pattern is invalid).
func (c *checker) locks(locks []LockRule) []*Pattern {
	pats := make([]*Pattern, len(locks))
	firstIndex := map[string]int{}
	catchAll := -1 // first rule whose pattern matches every non-empty key
	for i, r := range locks {
		p := fmt.Sprintf("locks[%d]", i)
		switch {
		case r.Pattern == "":
			c.errf(p+".pattern", `is required: the glob of the keys this rule protects, e.g. "*:lock"`)
		default:
			pat, err := Compile(r.Pattern)
			if err != nil {
				c.errf(p+".pattern", "%s: %s", strconv.Quote(r.Pattern), err.(*PatternError).Msg)
				break
			}
			pats[i] = pat
			if j, dup := firstIndex[r.Pattern]; dup {
				c.errf(p+".pattern", "%s repeats locks[%d]; the first matching rule wins, so this one is never used",
					strconv.Quote(r.Pattern), j)
			} else if catchAll >= 0 {
				c.errf(p+".pattern", "is never used: locks[%d] (%s) matches every key first",
					catchAll, strconv.Quote(locks[catchAll].Pattern))
			} else {
				firstIndex[r.Pattern] = i
			}
			if catchAll < 0 && (pat.kind == kindAll || pat.kind == kindNonEmpty) {
				catchAll = i
			}
		}
		oneOf(c, p+".release", r.Release, releaseModes)
		oneOf(c, p+".session", r.Session, sessionModes)
		oneOf(c, p+".unknown_owner", r.UnknownOwner, unknownOwners)
		if r.Scripts != ScriptsDefault {
			oneOf(c, p+".scripts", r.Scripts, scriptsModes)
		}
		oneOf(c, p+".unknown_sha", r.UnknownSHA, unknownSHAs)
		if r.MaxLease < 0 {
			c.errf(p+".max_lease", "must not be negative: the longest lease an acquisition may ask for (0: no limit, no lock delay)")
		}
		if d := r.Durability; d != nil {
			if d.Replicas < 1 {
				c.errf(p+".durability.replicas", "must be at least 1: the number of replicas that must have an acquisition before it is answered")
			}
			if d.Timeout <= 0 {
				c.errf(p+".durability.timeout", "must be above 0: how long to wait for the replicas (e.g. 100ms) before the acquisition is undone")
			}
		}
		if f := r.Fence; f != nil {
			fp := p + ".fence"
			if f.Counter == "" {
				c.errf(fp+".counter", "is required when fence is set: the key template of the fencing counter")
			}
			for j, g := range f.Guards {
				if g == "" {
					c.errf(fmt.Sprintf("%s.guards[%d]", fp, j), "is empty; each guard is a key template")
				}
			}
			oneOf(c, fp+".check", f.Check, fenceChecks)
			oneOf(c, fp+".mark", f.Mark, fenceMarks)
			oneOf(c, fp+".unfenced_writes", f.UnfencedWrites, unfencedWrites)
			if pats[i] != nil && f.Counter != "" {
				if _, err := compileFence(pats[i], f); err != nil {
					c.errf(fp, "%v", err)
				}
			}
		}
	}
	return pats
}

func oneOf[T ~string](c *checker, path string, val T, allowed []T) {
	if msg := NotOneOf(val, allowed); msg != "" {
		c.errf(path, "%s", msg)
	}
}

// NotOneOf says why val is not one of the allowed words ("" when it is),
// in the words a config error uses; package config's checks of its own
// settings' words say it the same way.
func NotOneOf[T ~string](val T, allowed []T) string {
	for _, a := range allowed {
		if val == a {
			return ""
		}
	}
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = string(a)
	}
	return strconv.Quote(string(val)) + " is not one of " + strings.Join(words, ", ")
}
