package admin

import (
	"fmt"
	"strings"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// CHECK <key>: the rule that matches the key and what the proxy would do with
// DEL, PEXPIRE, SET and a write of a key the lock guards, from the lock's
// holder and from any other client. The answers come from running the
// decider on those commands with two imagined clients, so they are exactly
// what the running rules decide; nothing is sent to Valkey.
func (a *Admin) check(c Conn, args [][]byte) []byte {
	key := args[0]
	d := a.h.Decider()
	if d.Active() && d.Table == nil {
		d = a.h.LoadTable()
		if d.Table == nil {
			return resp.AppendError(nil, a.h.NoTableText())
		}
	}
	r := d.Rules.Match(key)
	out := []Field{{"key", string(key)}}
	if r == nil {
		out = append(out, Field{"rule", nil},
			Field{"verdict", "no lock rule matches this key: the proxy passes its commands through untouched, unless a rule's fence guards it (see the writes below)"})
	} else {
		out = append(out,
			Field{"rule", fmt.Sprintf("%d %q", r.Index+1, r.Pattern.String())},
			Field{"release", string(r.Release)},
			Field{"session", string(r.Session)},
			Field{"unknown_owner", string(r.UnknownOwner)},
			Field{"fence", fenceText(r)},
		)
	}
	holder := &checkSession{lock: key, holds: true}
	stranger := &checkSession{lock: key}
	k := string(key)
	try := func(label string, cs *checkSession, cmd ...string) {
		out = append(out, Field{label, describePlan(d, cs, cmd)})
	}
	// Field names hold no spaces, so valkey-cli's RESP3 raw output
	// ("field value" per line) stays parseable.
	try("acquire", stranger, "SET", k, "<token>", "NX", "PX", "30000")
	try("del_holder", holder, "DEL", k)
	try("del_stranger", stranger, "DEL", k)
	try("pexpire_holder", holder, "PEXPIRE", k, "30000")
	try("pexpire_stranger", stranger, "PEXPIRE", k, "30000")
	try("set_holder", holder, "SET", k, "<value>")
	try("set_stranger", stranger, "SET", k, "<value>")
	if g := guardSample(r, key); g != "" {
		// A key this lock guards (SET of it): the holder holds the lock.
		out = append(out, Field{"guarded_key", g})
		try("guarded_write_holder", holder, "SET", g, "<value>")
		try("guarded_write_stranger", stranger, "SET", g, "<value>")
	} else if g := guardedBy(d.Rules, key); r == nil && g != nil {
		// The key is one a lock guards.
		f := g.Fencing
		out = append(out,
			Field{"guarded_by", fmt.Sprintf("%d %q", g.Index+1, g.Pattern.String())},
			Field{"write_holder", "fenced: runs with the fencing check of the holder's grant (check: " + string(f.Check) + "); refused with STALE when a newer grant exists"})
		try("write_stranger", stranger, "SET", k, "<value>")
	}
	return Encode(nil, out, c.Proto())
}

func fenceText(r *policy.Rule) string {
	f := r.Fence
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("counter %s, guards %s, check %s, unfenced_writes %s",
		f.Counter, strings.Join(f.Guards, " "), f.Check, f.UnfencedWrites)
}

// checkSession is an imagined client: the lock's holder, or a stranger
// while another client holds it. Who holds a lock is decided in Valkey, by
// the scripts, so the plan is the same for both; describePlan says what
// the script then does for each.
type checkSession struct {
	lock  []byte
	holds bool
}

const checkOwner = "check:this-client"

func (c *checkSession) Owner(*policy.Rule) string { return checkOwner }
func (c *checkSession) Proto() int                { return 2 }

// describePlan says in words what the decider, and the script it sends,
// do with one command from cs.
func describePlan(d *rewrite.Decider, cs *checkSession, cmd []string) string {
	args := make([][]byte, len(cmd))
	for i, a := range cmd {
		args[i] = []byte(a)
	}
	plan := d.Decide(args, cs, nil)
	if plan.Learn != nil {
		plan.Learn(false) // only imagined: nothing to learn
	}
	switch plan.Kind {
	case rewrite.Refuse:
		return "refused: " + plan.Err
	case rewrite.NeedKeys:
		return "decided when sent (its keys depend on its arguments)"
	case rewrite.Run:
		if plan.Script.Fn != "" {
			return "runs under lockproxy's monitor inside the function's library (FCALL of its monitored registration): every call the function makes is checked when it runs; the client gets the function's own reply"
		}
		if plan.Script.Client != "" {
			return "runs in its wrapper (one script): lockproxy's fence check before the client's body, the owner records of the locks it takes, releases or renews after it; the client gets the script's own reply"
		}
		e := plan.Effects[0]
		r := e.Rule
		switch plan.Script {
		case rewrite.Acquire:
			return "acquires: runs as a script that also mints the grant number (the fencing token) and writes the owner record in Valkey; the client gets SET's own reply"
		case rewrite.Release:
			switch {
			case r.Release == policy.ReleaseObserve:
				return "forwarded unchanged, logged and counted (a successor deletion when it removes another client's lock)"
			case !cs.holds && r.UnknownOwner == policy.UnknownOwnerForward:
				return "forwarded unchanged, logged and counted: deletes another client's lock (" + string(r.Release) + "/" + string(r.UnknownOwner) + ")"
			case !cs.holds:
				return "refused: NOTOWNER (Valkey holds no owner record of this client for the lock)"
			case r.Release == policy.ReleaseReject:
				return "refused: TOKENRELEASE (release: reject)"
			}
			return "token-checked: deletes the lock only while it still holds this holder's token and grant (read from its owner record in Valkey); otherwise answers 0"
		case rewrite.Holder:
			if !cs.holds {
				if e.Kind == rewrite.SetValue {
					return "refused: LOCKED (it would overwrite a lock this client holds no grant of)"
				}
				return "refused: NOTOWNER (Valkey holds no owner record of this client for the lock)"
			}
			return "token-checked: runs only while the lock still holds this holder's token and grant, and moves its owner record with it; otherwise changes nothing"
		case rewrite.Fenced:
			if cs.holds {
				return "fenced: runs with the fencing check of the holder's grant (its owner record in Valkey); refused with STALE when a newer grant exists"
			}
			switch e.Rule.Fencing.UnfencedWrites {
			case policy.UnfencedReject:
				return "refused: UNFENCED (the writer holds no grant of the lock that guards the key)"
			case policy.UnfencedObserve:
				return "forwarded unfenced, logged and counted (unfenced_writes: observe)"
			}
			return "forwarded unfenced (unfenced_writes: allow)"
		}
		return "runs as lockproxy's " + plan.Script.Name + " script"
	}
	for _, e := range plan.Effects {
		if e.Kind == rewrite.Observed {
			return "forwarded unchanged, logged and counted"
		}
	}
	return "forwarded unchanged"
}

// guardSample makes up a key that the lock key guards under r's fence: the
// first guard template filled in, its wildcards replaced by "x". "" when r
// has no fence.
func guardSample(r *policy.Rule, lock []byte) string {
	if r == nil || r.Fencing == nil || len(r.Fencing.Guards) == 0 {
		return ""
	}
	glob := r.Fencing.Guards[0].Expand(nil, lock, r.FenceBase(lock), true)
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteByte(glob[i])
			}
		case '*', '?':
			b.WriteByte('x')
		case '[':
			j := i + 1
			if j < len(glob) && glob[j] == '^' {
				b.WriteByte('x')
			} else if j < len(glob) {
				b.WriteByte(glob[j])
			}
			for i < len(glob) && glob[i] != ']' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// guardedBy returns the first rule whose fence guards key, if any.
func guardedBy(rules *policy.Rules, key []byte) *policy.Rule {
	all := rules.All()
	for i := range all {
		if f := all[i].Fencing; f != nil && f.MayGuard(key) {
			return &all[i]
		}
	}
	return nil
}
