package rewrite

// Protected reports whether key is one the decider acts on: a lock key, a
// key a fence guards, or one of lockproxy's own (counters, owner records,
// fence counters and marks). A command that touches such a key must reach
// Valkey whole, as the decider planned it: in a cluster, one whose keys span
// slots is refused rather than split, since each part would be decided and
// run on its own.
func (d *Decider) Protected(key []byte) bool {
	if !d.Active() {
		return false
	}
	if d.Rules.Match(key) != nil || d.own(key) {
		return true
	}
	if d.Rules.Fenced() {
		all := d.Rules.All()
		for i := range all {
			if f := all[i].Fencing; f != nil && f.MayGuard(key) {
				return true
			}
		}
	}
	return false
}
