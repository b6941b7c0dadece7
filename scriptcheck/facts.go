package scriptcheck

// Facts are what the conditions on a path establish about keys.

type symKind uint8

const (
	symKey  symKind = iota + 1 // KEYS[n]
	symIter                    // KEYS[i] in loop n
	symAll                     // every key in KEYS
	symName                    // a built name (name is its canonical form)
)

// sym identifies a key for facts: two calls about the same sym are about
// the same key.
type sym struct {
	kind symKind
	n    int
	name string
}

type factKind uint8

const (
	fGuard  factKind = iota + 1 // compared with an argument: the caller holds it
	fFresh                      // known not to exist (or just created by this script)
	fEither                     // one of the two
)

type fact struct {
	s sym
	k factKind
}

// facts is an immutable set: every operation returns a new one.
type facts []fact

func (fs facts) lookup(s sym) factKind {
	for _, f := range fs {
		if f.s == s {
			return f.k
		}
	}
	return 0
}

// get is the fact about s, counting facts about every key for one key.
func (fs facts) get(s sym) factKind {
	k := fs.lookup(s)
	if s.kind == symKey || s.kind == symIter {
		k = both(k, fs.lookup(sym{kind: symAll}))
	}
	return k
}

// both is the conjunction of two facts about one key.
func both(a, b factKind) factKind {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	case a == fGuard || b == fGuard:
		return fGuard
	case a == fFresh || b == fFresh:
		return fFresh
	}
	return fEither
}

// either is the disjunction.
func either(a, b factKind) factKind {
	switch {
	case a == 0 || b == 0:
		return 0
	case a == b:
		return a
	}
	return fEither
}

func (fs facts) with(s sym, k factKind) facts {
	out := make(facts, 0, len(fs)+1)
	found := false
	for _, f := range fs {
		if f.s == s {
			f.k = both(f.k, k)
			found = true
		}
		out = append(out, f)
	}
	if !found {
		out = append(out, fact{s: s, k: k})
	}
	return out
}

// and holds what fs or o holds.
func (fs facts) and(o facts) facts {
	out := fs
	for _, f := range o {
		out = out.with(f.s, f.k)
	}
	return out
}

// or holds what both fs and o hold: the facts after either of two paths.
func (fs facts) or(o facts) facts {
	var out facts
	for _, f := range fs {
		if k := either(f.k, o.lookup(f.s)); k != 0 {
			out = append(out, fact{s: f.s, k: k})
		}
	}
	return out
}

// lift turns facts about the current key of loop id into facts about every
// key: after a loop over all of KEYS that reached its end, each key passed
// the check.
func (fs facts) lift(id int) facts {
	var out facts
	for _, f := range fs {
		if f.s.kind == symIter && f.s.n == id {
			out = out.with(sym{kind: symAll}, f.k)
		}
	}
	return out
}
