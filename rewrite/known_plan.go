package rewrite

import "github.com/lockproxy/lockproxy/policy"

// knownPlan is the plan for an EVAL or EVALSHA of a known text (sha its
// SHA1), and whether there is one: false sends the call to the monitor,
// as any other text. A known text runs as its equivalent only in the
// shape its equivalent was written for (fits: the library's own keys and
// arguments); any other shape, a lock under max_lease or durability (whose
// checks the monitor makes), a lock under session: user (no token passes
// there), or an argument that names another lock or a
// guarded key goes to the monitor.
func (d *Decider) knownPlan(verb []byte, sha string, keys, argv [][]byte, s Session) (Plan, bool) {
	k := knownBySHA[sha]
	if k == nil {
		return Plan{}, false
	}
	if k.equiv == nil {
		// It only reads: the text itself, as the client sent it.
		return Plan{Kind: Run, Script: k.self, Keys: keys, Args: argv, Shape: ScriptReply, Verb: verb}, true
	}
	if !k.fits(keys, argv) {
		return Plan{}, false
	}
	for _, a := range argv {
		if d.Rules.Match(a) != nil || d.Rules.Fenced() && guarded(d.Rules, a) {
			return Plan{}, false
		}
	}
	key := keys[0]
	r := d.Rules.Match(key)
	if r == nil {
		if d.Rules.Fenced() && guarded(d.Rules, key) {
			return Plan{}, false
		}
		// No lock, no guarded key: the text needs nothing of lockproxy's.
		return Plan{Kind: Run, Script: k.self, Keys: keys, Args: argv, Shape: ScriptReply, Verb: verb}, true
	}
	if r.MaxLease > 0 || r.Durability != nil || r.Session == policy.SessionUser {
		// session: user lets no token pass (the monitor's rule): the
		// equivalents take the library's token check as it is.
		return Plan{}, false
	}
	run, clue := d.Epoch.args()
	if d.Cluster {
		run = clusterRun
	}
	args := make([][]byte, 0, len(argv)+8)
	args = append(append(args, argv...), d.keep(), clue, run, d.counter(r, key), RecordsKey(key), []byte(s.Owner(r)), releaseMode(r), IndexKey(key, d.Cluster))
	return Plan{Kind: Run, Script: k.equiv, Keys: keys, Args: args, Shape: ScriptReply, Verb: verb, Clue: len(argv) + 1}, true
}

// fits reports whether a call of a known text has the shape its equivalent
// takes: one key, the library's number of arguments, and the lease and
// offset arguments integers Valkey and Lua read as the library means them
// (any other shape runs under the monitor, which answers as Valkey would).
func (k *known) fits(keys, argv [][]byte) bool {
	op := knownOps[k.Op]
	if len(keys) != 1 || len(argv) != op.argc {
		return false
	}
	switch k.Op {
	case opRefresh, opTouchSetNX, opRefreshM:
		return leaseMS(argv[1])
	case opObtain, opObtainM:
		return leaseMS(argv[2]) && len(argv[1]) <= 6 && allDigits(argv[1])
	}
	return true
}

// leaseMS: a positive number of ms as Valkey parses it (no sign, no
// leading zero), small enough that no expiry overflows.
func leaseMS(b []byte) bool {
	return len(b) > 0 && len(b) <= 12 && b[0] != '0' && allDigits(b)
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
