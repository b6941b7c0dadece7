package rewrite

import (
	"github.com/lockproxy/lockproxy/resp"
	"strings"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// Session is what the decider needs to know about the client that sent a
// command. The proxy implements it over its grant records.
type Session interface {
	// Owner is who holds locks for this client under r's session scope
	// (the connection, its client name, or its host).
	Owner(r *policy.Rule) string
	// Grant returns owner's latest grant of key, if the proxy saw one.
	Grant(key []byte, owner string) (value []byte, grant int64, ok bool)
	// Holder returns an owner other than notOwner whose grant of key has a
	// lease that is still running ("" if none).
	Holder(key []byte, notOwner string) string
	// Held lists owner's grants (any lock key), for fencing its writes.
	Held(owner string) []Held
}

// Held is one grant a session holds.
type Held struct {
	Key    []byte
	Number int64
}

// Decider turns commands into Plans. It is safe for concurrent use; build a
// new one to change the rules (the proxy swaps it atomically on reload).
type Decider struct {
	Table   *keyspec.Table
	Rules   *policy.Rules
	OnFlush policy.FlushPolicy
	// Scripts remembers the scripts and function libraries seen, with
	// their analysis. Shared by the deciders that replace each other on
	// reload (copy the pointer); nil: EVAL bodies are analysed every time
	// and every EVALSHA and FCALL is an unseen script.
	Scripts *scriptcheck.Cache
}

// Active reports whether there is anything to decide at all: without lock
// rules every command is forwarded and Decide need not be called.
func (d *Decider) Active() bool { return d != nil && d.Rules != nil && d.Rules.Len() > 0 }

// Decide plans one command. scratch is reused for key extraction (pass a
// slice with capacity to avoid allocating on the hot path).
func (d *Decider) Decide(args [][]byte, s Session, scratch []keyspec.Key) Plan {
	if !d.Active() || d.Table == nil || len(args) == 0 {
		return Plan{}
	}
	cmd := d.Table.Command(args)
	if cmd == nil {
		return Plan{} // unknown command: Valkey answers the error
	}
	if cmd.KeylessWrite() && isFlush(args[0]) {
		return d.flush(args[0])
	}
	keys, st := cmd.Keys(args, scratch[:0])
	switch st {
	case keyspec.OK, keyspec.VariableFlags:
	case keyspec.NeedsGetKeys:
		if isScript(args[0]) {
			break // handled below, from the script's body
		}
		if !cmd.Flags.Has(keyspec.Write) || (resp.EqualFold(args[0], "sort") && !hasArg(args, "store")) {
			return Plan{} // only reads keys: nothing to protect, no round trip
		}
		return Plan{Kind: NeedKeys}
	default:
		return Plan{} // arity error and such: Valkey answers
	}
	if isScript(args[0]) || isScriptAdmin(args[0]) {
		return d.script(args, keys, s)
	}
	// rule is the first lock key's rule; set, setnx and renew take it as
	// their key's (they have one key, args[1]), instead of matching again.
	var rule *policy.Rule
	for _, k := range keys {
		if rule = d.Rules.Match(args[k.Index]); rule != nil {
			break
		}
	}
	if rule == nil {
		// Only a write to a guarded key needs the fence; checking that first
		// keeps every other command free of allocations.
		for _, k := range keys {
			if d.Rules.Fenced() && k.Flags.Writes() && guarded(d.Rules, args[k.Index]) {
				return d.fence(args, touches(args, keys), s)
			}
		}
		return Plan{}
	}
	name := cmd.Upper
	switch {
	case name == "SET":
		return d.set(args, rule, s)
	case name == "SETNX" && len(args) == 3:
		return d.setnx(args, rule, s)
	case name == "DEL" || name == "UNLINK":
		return d.release(name, args, keys, s)
	case name == "GETEX" && len(args) == 2:
		return Plan{} // GETEX without options only reads
	case cmd.ExpiryOnly():
		return d.renew(name, args, rule, s)
	}
	return d.generic(name, args, touches(args, keys), s)
}

func touches(args [][]byte, keys []keyspec.Key) []touch {
	t := make([]touch, 0, len(keys))
	for _, k := range keys {
		t = append(t, touch{key: args[k.Index], flags: k.Flags})
	}
	return t
}

func hasArg(args [][]byte, word string) bool {
	for _, a := range args[1:] {
		if resp.EqualFold(a, word) {
			return true
		}
	}
	return false
}

// DecideKeys plans a command whose keys Valkey listed (the NeedKeys path).
func (d *Decider) DecideKeys(args [][]byte, keys []keyspec.KeyWithFlags, s Session) Plan {
	touched := make([]touch, 0, len(keys))
	for _, k := range keys {
		touched = append(touched, touch{key: []byte(k.Key), flags: k.Flags})
	}
	return d.generic(strings.ToUpper(string(args[0])), args, touched, s)
}

type touch struct {
	key   []byte
	flags keyspec.KeyFlags
}

// generic handles every command that is not an acquisition, a release or a
// renewal: if it would overwrite or remove a lock key it is refused, or
// forwarded and recorded under `release: observe`. The keys it writes that
// are not lock keys are then fenced like any other write.
func (d *Decider) generic(name string, args [][]byte, keys []touch, s Session) Plan {
	var effects []Effect
	for _, k := range keys {
		r := d.Rules.Match(k.key)
		if r == nil || !(k.flags.Deletes() || k.flags.Overwrites()) {
			continue
		}
		owner := s.Owner(r)
		e := Effect{Command: name, Key: clone(k.key), Rule: r, Owner: owner, Holder: s.Holder(k.key, owner)}
		if r.Release == policy.ReleaseObserve {
			e.Kind = Observed
			effects = append(effects, e)
			continue
		}
		e.Kind, e.Reason = Refused, errLocked(name, k.key, r)
		return Plan{Kind: Refuse, Err: e.Reason, Effects: []Effect{e}}
	}
	if d.Rules.Fenced() && args != nil {
		plain := make([]touch, 0, len(keys))
		for _, k := range keys {
			if d.Rules.Match(k.key) == nil {
				plain = append(plain, k)
			}
		}
		p := d.fence(args, plain, s)
		p.Effects = append(effects, p.Effects...)
		return p
	}
	return Plan{Effects: effects}
}

// set: SET ... NX is an acquisition; any other SET of a lock key is the
// holder changing its own lock (token-checked) or an overwrite (refused).
func (d *Decider) set(args [][]byte, r *policy.Rule, s Session) Plan {
	o := parseSet(args)
	if !o.ok {
		return Plan{} // Valkey answers the syntax error
	}
	key := args[1]
	owner := s.Owner(r)
	if o.nx && !o.get {
		// The script's ARGV is the command's own arguments after the key:
		// they stay valid until the plan is encoded (see Plan).
		ck, cv := clone2(key, args[2])
		return Plan{
			Kind:   Run,
			Script: Acquire,
			Keys:   [][]byte{key, d.counter(r, key)},
			Args:   args[2:],
			Shape:  AcquireReply,
			Effects: []Effect{{
				Kind: Grant, Command: "SET", Key: ck, Rule: r, Owner: owner,
				Value: cv, Lease: o.lease, At: o.at,
			}},
		}
	}
	if o.nx {
		// SET NX GET answers the old value, not whether the lock was
		// taken: forwarded, and no grant is recorded.
		return Plan{}
	}
	value, grant, held := s.Grant(key, owner)
	if held && r.Release != policy.ReleaseObserve {
		gargs := make([][]byte, 0, len(args)+2)
		gargs = append(gargs, value, itoa(grant), []byte("nil"), []byte("SET"))
		gargs = append(gargs, args[2:]...)
		return Plan{
			Kind: Run, Script: Guarded,
			Keys: [][]byte{key, d.counter(r, key)}, Args: gargs,
			Effects: []Effect{{Kind: SetValue, Command: "SET", Key: clone(key), Rule: r, Owner: owner, Value: clone(args[2]), Grant: grant, Lease: o.lease, At: o.at}},
		}
	}
	return d.generic("SET", nil, []touch{{key: key, flags: keyspec.KeyOW}}, s)
}

// setnx: SETNX is the acquisition of old clients (no lease): the same script
// as SET ... NX, answering SETNX's :1 or :0.
func (d *Decider) setnx(args [][]byte, r *policy.Rule, s Session) Plan {
	key := args[1]
	return Plan{
		Kind:   Run,
		Script: Acquire,
		Keys:   [][]byte{key, d.counter(r, key)},
		Args:   [][]byte{args[2], []byte("NX")},
		Shape:  SetNXReply,
		Effects: []Effect{{
			Kind: Grant, Command: "SETNX", Key: clone(key), Rule: r, Owner: s.Owner(r), Value: clone(args[2]),
		}},
	}
}

// release: DEL/UNLINK. Plain keys are deleted as asked; each lock key by the
// rule's release mode and whether this client holds it. Any refusal refuses
// the whole command, so nothing is deleted half-way.
func (d *Decider) release(name string, args [][]byte, keys []keyspec.Key, s Session) Plan {
	// Sized for the common case up front: this runs for every release, and
	// growing these slices from nothing was most of its cost. sargs is the
	// script's ARGV: the command, the number of plain keys, then value and
	// grant per lock key.
	var plain [][]byte
	locks := make([][]byte, 0, 2*len(keys))
	sargs := make([][]byte, 2, 2+2*len(keys))
	effects := make([]Effect, 0, len(keys))
	for _, k := range keys {
		key := args[k.Index]
		r := d.Rules.Match(key)
		if r == nil {
			if d.Rules.Fenced() && guarded(d.Rules, key) {
				// A guarded key's delete must pass its fence; the release
				// script cannot run that check, so the two do not mix.
				reason := errMixedFence(name, key)
				return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: name, Key: clone(key), Reason: reason}}}
			}
			plain = append(plain, key)
			continue
		}
		owner := s.Owner(r)
		holder := s.Holder(key, owner)
		value, grant, held := s.Grant(key, owner)
		base := Effect{Command: name, Rule: r, Owner: owner, Holder: holder}
		switch {
		case r.Release == policy.ReleaseObserve ||
			(!held && r.UnknownOwner == policy.UnknownOwnerForward):
			base.Kind, base.Key = Observed, clone(key)
			effects = append(effects, base)
			plain = append(plain, key)
		case !held:
			base.Kind, base.Key, base.Reason = Refused, clone(key), errNotOwnerRelease(name, key, r)
			return Plan{Kind: Refuse, Err: base.Reason, Effects: []Effect{base}}
		case r.Release == policy.ReleaseReject:
			base.Kind, base.Key, base.Reason = Refused, clone(key), errRejectRelease(name, key, r)
			return Plan{Kind: Refuse, Err: base.Reason, Effects: []Effect{base}}
		default: // rewrite, held
			base.Kind, base.Grant = Released, grant
			base.Key, base.Value = clone2(key, value)
			effects = append(effects, base)
			locks = append(locks, key, d.counter(r, key))
			sargs = append(sargs, value, itoa(grant))
		}
	}
	for i := range effects {
		effects[i].Plain = len(plain) - countObserved(effects)
	}
	if len(locks) == 0 {
		return Plan{Effects: effects}
	}
	skeys := locks
	if len(plain) > 0 {
		skeys = append(plain, locks...)
	}
	sargs[0], sargs[1] = releaseNames[name], itoa(int64(len(plain)))
	return Plan{Kind: Run, Script: Release, Keys: skeys, Args: sargs, Effects: effects}
}

// renew: a lease change (EXPIRE family, PERSIST, GETEX with options) runs
// token-checked for the holder and is refused for anyone else.
func (d *Decider) renew(name string, args [][]byte, r *policy.Rule, s Session) Plan {
	key := args[1]
	owner := s.Owner(r)
	e := Effect{Command: name, Key: clone(key), Rule: r, Owner: owner, Holder: s.Holder(key, owner)}
	if r.Release == policy.ReleaseObserve {
		e.Kind = Observed
		return Plan{Effects: []Effect{e}}
	}
	value, grant, held := s.Grant(key, owner)
	if !held {
		e.Kind, e.Reason = Refused, errNotOwnerRenew(name, key, r)
		return Plan{Kind: Refuse, Err: e.Reason, Effects: []Effect{e}}
	}
	fail := []byte("0")
	if name == "GETEX" {
		fail = []byte("nil")
	}
	gargs := make([][]byte, 0, len(args)+2)
	gargs = append(gargs, value, itoa(grant), fail, []byte(name))
	gargs = append(gargs, args[2:]...)
	e.Kind, e.Grant = Renewed, grant
	return Plan{Kind: Run, Script: Guarded, Keys: [][]byte{key, d.counter(r, key)}, Args: gargs, Effects: []Effect{e}}
}

// counter is the key whose INCR mints the grant numbers of a lock key: the
// rule's fence counter, or the default next to the lock.
func (d *Decider) counter(r *policy.Rule, key []byte) []byte {
	if r.Fencing != nil {
		return r.Fencing.CounterKey(r, key)
	}
	return CounterKey(key)
}

func (d *Decider) flush(name []byte) Plan {
	cmd := strings.ToUpper(string(name))
	if d.OnFlush == policy.FlushReject {
		reason := errFlush(cmd)
		return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: cmd, Reason: reason}}}
	}
	return Plan{Effects: []Effect{{Kind: Flushed, Command: cmd}}}
}

func isFlush(name []byte) bool {
	return resp.EqualFold(name, "flushall") || resp.EqualFold(name, "flushdb")
}

func isScript(name []byte) bool {
	for _, s := range [...]string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		if resp.EqualFold(name, s) {
			return true
		}
	}
	return false
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// clone2 copies two slices in one allocation (a lock's key and value, kept
// together for as long as its effect is).
func clone2(a, b []byte) ([]byte, []byte) {
	buf := make([]byte, len(a)+len(b))
	n := copy(buf, a)
	copy(buf[n:], b)
	return buf[:n:n], buf[n:]
}

// releaseNames are the release script's first argument, shared (encoded,
// never written to): release only ever runs for these two.
var releaseNames = map[string][]byte{"DEL": []byte("DEL"), "UNLINK": []byte("UNLINK")}

// digits are itoa's answers for 0-9, shared (encoded, never written to):
// the plain-key count of a release and early grant numbers.
var digits = func() (d [10][]byte) {
	for i := range d {
		d[i] = []byte{byte('0' + i)}
	}
	return d
}()

func itoa(n int64) []byte {
	if n >= 0 && n < 10 {
		return digits[n]
	}
	var buf [20]byte
	i := len(buf)
	neg := n < 0
	if neg {
		n = -n
	}
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return append([]byte(nil), buf[i:]...)
}

// countObserved counts the lock keys a release forwards as plain keys.
func countObserved(effects []Effect) int {
	n := 0
	for _, e := range effects {
		if e.Kind == Observed {
			n++
		}
	}
	return n
}

// guarded reports whether some fenced rule guards key.
func guarded(rules *policy.Rules, key []byte) bool {
	all := rules.All()
	for i := range all {
		if f := all[i].Fencing; f != nil && f.MayGuard(key) {
			return true
		}
	}
	return false
}
