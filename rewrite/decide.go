package rewrite

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/resp"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// Session is what the decider needs to know about the client that sent a
// command: who it is. Who holds which lock is Valkey's to say: the scripts
// read the owner records kept beside each lock, so nothing about grants is
// asked of the session.
type Session interface {
	// Owner is who holds locks for this client under r's session scope:
	// its connection (an instance id and a connection id), its client
	// name, or its host. The same name or host is the same owner on every
	// lockproxy instance.
	Owner(r *policy.Rule) string
	// Proto is the RESP version the client speaks (2 or 3): the Fenced
	// script converts its command's reply the same way.
	Proto() int
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
	// Keep is how long an owner record outlives its lease, in
	// milliseconds as the scripts take it (KeepArg); nil: 10 minutes.
	Keep []byte
	// Cluster: Valkey is a cluster; acquisitions take the epoch's floor
	// from the node's own failover epoch (fnGrant).
	Cluster bool
	// Epoch is what the proxy knows of the primary's epoch (shared by the
	// deciders that replace each other on reload); nil: nothing, and
	// grants mint under whatever the epoch hash says.
	Epoch *EpochClue
	// Clock reads the time for a lease change given as a time (PEXPIREAT,
	// EXAT, ...) under a rule's max_lease (lease.go); nil: time.Now.
	Clock func() time.Time
	// Gate: scripts' and functions' calls of the commands that
	// reconfigure Valkey are refused (gate.go; admin_commands admin or
	// refuse), by the gated list of Commands (nil: commands.Fallback).
	Gate     bool
	Commands *commands.Table
}

// KeepArg is the scripts' keep_lapsed argument for a duration.
func KeepArg(d time.Duration) []byte { return []byte(strconv.FormatInt(d.Milliseconds(), 10)) }

var defaultKeep = KeepArg(10 * time.Minute)

func (d *Decider) keep() []byte {
	if d.Keep != nil {
		return d.Keep
	}
	return defaultKeep
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
		return d.unknown(args)
	}
	if cmd.KeylessWrite() && isFlush(args[0]) {
		return d.flush(args)
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
	case keyspec.UnknownCommand:
		return d.unknown(args) // no such subcommand in the table
	default:
		return Plan{} // an arity error: Valkey refuses it before it runs
	}
	if isScript(args[0]) || isScriptAdmin(args[0]) {
		return d.script(args, keys, s)
	}
	if len(args) == 2 && cmd.Upper == "GETEX" {
		// GETEX without options only reads, whatever its key is (the
		// monitor judges it so for a script's call).
		return Plan{}
	}
	for _, k := range keys {
		if k.Flags.Writes() && d.own(args[k.Index]) {
			return d.refuseOwn(cmd.Upper, args[k.Index])
		}
	}
	if crossDB(cmd.Upper, args) {
		if p, refused := d.refuseCrossDB(cmd.Upper, touches(args, keys), s); refused {
			return p
		}
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
				// Inside the fence's script nothing blocks: BLPOP would
				// answer nil at once instead of waiting, so a blocking
				// write to a guarded key is refused.
				if cmd.Blocks(args) {
					return refuseBlocking(cmd.Upper, args[k.Index])
				}
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
	case cmd.ExpiryOnly():
		if p := d.leaseRefusal(name, args, rule); p != nil {
			return *p
		}
		return d.renew(name, args, rule, s)
	}
	return d.generic(name, args, touches(args, keys), s)
}

// positive reports whether b is an integer above 0 as strconv reads it (a
// superset of what Valkey's string2ll takes).
func positive(b []byte) bool {
	n, err := strconv.ParseInt(string(b), 10, 64)
	return err == nil && n > 0
}

func touches(args [][]byte, keys []keyspec.Key) []touch {
	t := make([]touch, 0, len(keys))
	for _, k := range keys {
		t = append(t, touch{key: args[k.Index], flags: k.Flags})
	}
	return t
}

// hasArg reports whether an argument after the name is word, compared as
// Valkey compares an option (a C string, in any case: "STORE\x00x" is
// SORT's STORE).
func hasArg(args [][]byte, word string) bool {
	for _, a := range args[1:] {
		if resp.EqualFold(cstr(a), word) {
			return true
		}
	}
	return false
}

// unknown plans a command (or subcommand) that Valkey's command table, as
// lockproxy read it, does not have. Valkey answers its error, unless it
// has the command after all (a module loaded since the table was read),
// when nothing here tells what it does to its keys: so when an argument
// is a protected key (Protected), Valkey is asked for the keys (NeedKeys:
// COMMAND GETKEYSANDFLAGS, which answers an error for a command it does
// not have either, and the command is then forwarded for its error).
func (d *Decider) unknown(args [][]byte) Plan {
	if len(args[0]) == 0 {
		// No command has an empty name (Valkey's table, modules' too):
		// Valkey answers its unknown-command error, whatever follows.
		return Plan{}
	}
	for _, a := range args[1:] {
		if d.Protected(a) {
			return Plan{Kind: NeedKeys}
		}
	}
	return Plan{}
}

// KeysUnknown is the plan for a command whose keys only Valkey can list
// (NeedKeys) when asking it (COMMAND GETKEYSANDFLAGS) failed with err.
// Valkey's own ERR answers (no key arguments, invalid arguments, no such
// command, a wrong arity) mean the command names no key or fails as
// sent: it is forwarded, for Valkey to answer. BUSY and LOADING are
// answered as they came. Anything else (an ACL refusal of COMMAND, a
// connection lost) leaves its keys unknown: refused, never forwarded
// unchecked.
func KeysUnknown(args [][]byte, err error) Plan {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "ERR "):
		return Plan{}
	case strings.HasPrefix(msg, "BUSY ") || strings.HasPrefix(msg, "LOADING "):
		// What Valkey would answer the command itself just now; not
		// forwarded: by the time it arrived Valkey might run it.
		return Plan{Kind: Refuse, Err: msg}
	}
	reason := errKeysUnknown(upper(args[0]), msg)
	return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: upper(args[0]), Reason: reason}}}
}

// DecideKeys plans a command whose keys Valkey listed (the NeedKeys path).
func (d *Decider) DecideKeys(args [][]byte, keys []keyspec.KeyWithFlags, s Session) Plan {
	touched := make([]touch, 0, len(keys))
	name := commandName(args[0])
	for _, k := range keys {
		if k.Flags.Writes() && d.own([]byte(k.Key)) {
			return d.refuseOwn(name, []byte(k.Key))
		}
		touched = append(touched, touch{key: []byte(k.Key), flags: k.Flags})
	}
	if crossDB(name, args) {
		if p, refused := d.refuseCrossDB(name, touched, s); refused {
			return p
		}
	}
	return d.generic(name, args, touched, s)
}

// crossDB reports whether a command (name upper case) writes its keys into
// another database or server: MOVE, MIGRATE (the key is deleted here
// unless COPY), COPY with a DB option (compared as Valkey's copyCommand
// does, as a C string).
func crossDB(name string, args [][]byte) bool {
	switch name {
	case "MOVE", "MIGRATE":
		return true
	case "COPY":
		for _, a := range args[min(3, len(args)):] {
			if resp.EqualFold(cstr(a), "db") {
				return true
			}
		}
	}
	return false
}

// refuseCrossDB refuses a cross-database command that writes a lock key or
// a key a lock guards, as the monitor refuses it inside a script: the
// lock's owner records and fence are those of the database the command
// runs in, where anyone may hold the same lock name.
func (d *Decider) refuseCrossDB(name string, keys []touch, s Session) (Plan, bool) {
	for _, k := range keys {
		if !k.flags.Writes() {
			continue
		}
		r := d.Rules.Match(k.key)
		if r == nil && !(d.Rules.Fenced() && guarded(d.Rules, k.key)) {
			continue
		}
		e := Effect{Kind: Refused, Command: name, Key: clone(k.key), Rule: r, Reason: errCrossDB(name, k.key, r)}
		if r != nil {
			e.Owner = s.Owner(r)
		}
		return Plan{Kind: Refuse, Err: e.Reason, Effects: []Effect{e}}, true
	}
	return Plan{}, false
}

type touch struct {
	key   []byte
	flags keyspec.KeyFlags
}

// own reports whether key is one of lockproxy's own: a grant counter, an
// owner records hash, the locks' index (index.go) or a WAIT's prime (by their suffixes, whatever the
// rules say now: rules change on reload, the keys stay), the epoch hash
// (EpochKey), the monitor's flush probe (FlushProbeKey), or a fence counter
// of a rule and its hash of highest tokens. Clients may read them; a write
// could make an old grant current again or erase a fence (or be erased).
func (d *Decider) own(key []byte) bool {
	if bytes.HasSuffix(key, []byte(counterSuffix)) || bytes.HasSuffix(key, []byte(recordsSuffix)) || bytes.HasSuffix(key, []byte(waitSuffix)) || bytes.HasSuffix(key, []byte(indexSuffix)) || bytes.HasSuffix(key, []byte(epochSuffix)) || string(key) == EpochKey || string(key) == FlushProbeKey {
		return true
	}
	if !d.Rules.Fenced() {
		return false
	}
	all := d.Rules.All()
	for i := range all {
		if f := all[i].Fencing; f != nil && f.OwnsKey(&all[i], key) {
			return true
		}
	}
	return false
}

// refuseUnsupported refuses a command on a protected key that lockproxy
// does not understand as Valkey would (errUnsupported).
func refuseUnsupported(name string, key []byte, r *policy.Rule, what, todo string) Plan {
	reason := errUnsupported(name, key, r, what, todo)
	return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: name, Key: clone(key), Rule: r, Reason: reason}}}
}

func (d *Decider) refuseOwn(name string, key []byte) Plan {
	reason := errOwnKey(name, key)
	return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: name, Key: clone(key), Reason: reason}}}
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
		e := Effect{Command: name, Key: clone(k.key), Rule: r, Owner: s.Owner(r)}
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
		// The fence's effects first: the Fenced script numbers its
		// checks ("UNFENCED i") in the order of these effects.
		p.Effects = append(p.Effects, effects...)
		return p
	}
	return Plan{Effects: effects}
}

// lockKeys are the keys a lock script touches for one lock: the lock, its
// grant counter and its owner records.
func (d *Decider) lockKeys(dst [][]byte, r *policy.Rule, key []byte) [][]byte {
	return append(dst, key, d.counter(r, key), RecordsKey(key))
}

// index is the locks' index a lock's records are listed in (index.go). The
// scripts take it among their ARGV, not their KEYS: a Valkey user whose
// key patterns leave it out may still run them (Valkey checks an EVAL's
// KEYS against the user's patterns before it runs), and the scripts then
// only leave the index unwritten.
func (d *Decider) index(key []byte) []byte { return IndexKey(key, d.Cluster) }

// set: SET ... NX (any expiry form, GET, KEEPTTL) is an acquisition; any
// other SET of a lock key is the holder changing its own lock, which the
// Holder script runs only for the holder (and refuses, LOCKED, for anyone
// without a record of the lock).
func (d *Decider) set(args [][]byte, r *policy.Rule, s Session) Plan {
	o := parseSet(args)
	key := args[1]
	switch {
	case o.nul:
		// Valkey reads an option only up to a NUL byte; the scripts that
		// run an acquisition read the options whole.
		return refuseUnsupported("SET", key, r, "an option holds a NUL byte, which Valkey reads the option up to", "send the option without it")
	case !o.ok:
		// A syntax error by Valkey's own rules (setopts.go): Valkey
		// refuses it and writes nothing.
		return Plan{}
	case o.exp > 0 && !positive(args[o.exp+1]):
		// Valkey refuses the expiry's value (not a number, or not above
		// 0) and writes nothing; the scripts' Lua would read it as no
		// number. A number Valkey still refuses ("05", "+5") runs in the
		// plan, whose SET answers Valkey's own error.
		return Plan{}
	}
	owner := s.Owner(r)
	if o.nx {
		// The script's ARGV ends with the command's own arguments after
		// the key: they stay valid until the plan is encoded (see Plan).
		get, shape := none, AcquireReply
		if o.get {
			// SET NX GET answers the old value: nil when the key was
			// absent, which is when it took the lock.
			get, shape = getFlag, AcquireGetReply
		}
		run, known := d.Epoch.args()
		sargs := make([][]byte, 0, 6+len(args)-2)
		sargs = append(sargs, []byte(owner), d.keep(), d.acquireFlags(get, r), known, run, d.index(key))
		ck, cv := clone2(key, args[2])
		return Plan{
			Kind:   Run,
			Script: Acquire,
			Keys:   d.lockKeys(make([][]byte, 0, 3), r, key),
			Args:   append(sargs, args[2:]...),
			Clue:   3,
			Shape:  shape,
			Effects: []Effect{{
				Kind: Grant, Command: "SET", Key: ck, Rule: r, Owner: owner, Value: cv,
			}},
		}
	}
	if p := d.leaseRefusal("SET", args, r); p != nil {
		return *p
	}
	if r.Release == policy.ReleaseObserve {
		return Plan{Effects: []Effect{{Kind: Observed, Command: "SET", Key: clone(key), Rule: r, Owner: owner}}}
	}
	return d.holder("SET", args, r, owner, nilReply, codeLocked, Effect{Kind: SetValue, Value: clone(args[2])})
}

// setnx: SETNX is the acquisition of old clients (no lease): the same script
// as SET ... NX, answering SETNX's :1 or :0.
func (d *Decider) setnx(args [][]byte, r *policy.Rule, s Session) Plan {
	key := args[1]
	owner := s.Owner(r)
	run, known := d.Epoch.args()
	return Plan{
		Kind:   Run,
		Script: Acquire,
		Keys:   d.lockKeys(make([][]byte, 0, 3), r, key),
		Args:   [][]byte{[]byte(owner), d.keep(), d.acquireFlags(none, r), known, run, d.index(key), args[2], nxWord},
		Clue:   3,
		Shape:  SetNXReply,
		Effects: []Effect{{
			Kind: Grant, Command: "SETNX", Key: clone(key), Rule: r, Owner: owner, Value: clone(args[2]),
		}},
	}
}

// release: DEL/UNLINK. Plain keys are deleted as asked; each lock key by the
// rule's release mode and, inside the Release script, by whether this
// client's record says it holds the lock. Any refusal refuses the whole
// command, so nothing is deleted half-way.
func (d *Decider) release(name string, args [][]byte, keys []keyspec.Key, s Session) Plan {
	// Sized for the common case up front: this runs for every release, and
	// growing these slices from nothing was most of its cost. sargs is the
	// script's ARGV: the command, the number of plain keys, keep_lapsed,
	// then owner, mode and index per lock key.
	var plain [][]byte
	locks := make([][]byte, 0, 3*len(keys))
	sargs := make([][]byte, 3, 3+3*len(keys))
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
		effects = append(effects, Effect{Kind: Released, Command: name, Key: clone(key), Rule: r, Owner: owner})
		locks = d.lockKeys(locks, r, key)
		sargs = append(sargs, []byte(owner), releaseMode(r), d.index(key))
	}
	if len(locks) == 0 {
		return Plan{}
	}
	for i := range effects {
		effects[i].Plain = len(plain)
	}
	skeys := locks
	if len(plain) > 0 {
		skeys = append(plain, locks...)
	}
	sargs[0], sargs[1], sargs[2] = releaseNames[name], itoa(int64(len(plain))), d.keep()
	return Plan{Kind: Run, Script: Release, Keys: skeys, Args: sargs, Shape: ReleaseReply, Effects: effects}
}

// releaseMode is a rule's mode as the Release script takes it.
func releaseMode(r *policy.Rule) []byte {
	switch {
	case r.Release == policy.ReleaseObserve:
		return modeObserve
	case r.Release == policy.ReleaseReject && r.UnknownOwner == policy.UnknownOwnerForward:
		return modeRejectFwd
	case r.Release == policy.ReleaseReject:
		return modeReject
	case r.UnknownOwner == policy.UnknownOwnerForward:
		return modeRewriteFwd
	}
	return modeRewrite
}

// renew: a lease change (EXPIRE family, PERSIST, GETEX with options) runs
// for the holder only, in the Holder script, and is refused (NOTOWNER) for
// anyone without a record of the lock.
func (d *Decider) renew(name string, args [][]byte, r *policy.Rule, s Session) Plan {
	owner := s.Owner(r)
	if r.Release == policy.ReleaseObserve {
		return Plan{Effects: []Effect{{Kind: Observed, Command: name, Key: clone(args[1]), Rule: r, Owner: owner}}}
	}
	fail := zeroReply
	if name == "GETEX" {
		fail = nilReply
	}
	return d.holder(name, args, r, owner, fail, codeNotOwner, Effect{Kind: Renewed})
}

// holder plans a command the Holder script runs for the lock's holder.
func (d *Decider) holder(name string, args [][]byte, r *policy.Rule, owner string, fail, code []byte, e Effect) Plan {
	key := args[1]
	sargs := make([][]byte, 0, 6+len(args)-2)
	sargs = append(sargs, []byte(owner), d.keep(), fail, code, d.index(key), []byte(name))
	e.Command, e.Key, e.Rule, e.Owner = name, clone(key), r, owner
	return Plan{
		Kind: Run, Script: Holder,
		Keys:    d.lockKeys(make([][]byte, 0, 3), r, key),
		Args:    append(sargs, args[2:]...),
		Shape:   HolderReply,
		Effects: []Effect{e},
	}
}

// The scripts' fixed arguments, shared (encoded, never written to).
var (
	none           = []byte{}
	getFlag        = []byte("get")
	nxWord         = []byte("NX")
	zeroReply      = []byte("0")
	nilReply       = []byte("nil")
	codeNotOwner   = []byte("NOTOWNER")
	codeLocked     = []byte("LOCKED")
	modeRewrite    = []byte("rewrite")
	modeRewriteFwd = []byte("rewrite+")
	modeReject     = []byte("reject")
	modeRejectFwd  = []byte("reject+")
	modeObserve    = []byte("observe")
)

// acquireFlags is Acquire's ARGV[3]: "get" or "", then ":<ms>" under a
// rule's max_lease (see acquireDelay), then "!" in front of a cluster (see
// fnGrant).
func (d *Decider) acquireFlags(get []byte, r *policy.Rule) []byte {
	if r.MaxLease <= 0 && !d.Cluster {
		return get
	}
	out := append([]byte(nil), get...)
	if r.MaxLease > 0 {
		out = strconv.AppendInt(append(out, ':'), r.MaxLease.Milliseconds(), 10)
	}
	if d.Cluster {
		out = append(out, '!')
	}
	return out
}

// counter is the key whose INCR mints the grant numbers of a lock key: the
// rule's fence counter, or the default next to the lock.
func (d *Decider) counter(r *policy.Rule, key []byte) []byte {
	if r.Fencing != nil {
		return r.Fencing.CounterKey(r, key)
	}
	return CounterKey(key)
}

// flush: FLUSHALL, FLUSHDB and SWAPDB are refused under on_flush: reject.
// Allowed, FLUSHALL and FLUSHDB run in the Flush script, which raises the
// epoch of what they empty in the same step, so the counters they delete
// start again above every token handed out before (docs/failover.md).
func (d *Decider) flush(args [][]byte) Plan {
	cmd := strings.ToUpper(string(args[0]))
	if d.OnFlush == policy.FlushReject {
		reason := errFlush(cmd)
		return Plan{Kind: Refuse, Err: reason, Effects: []Effect{{Kind: Refused, Command: cmd, Reason: reason}}}
	}
	effects := []Effect{{Kind: Flushed, Command: cmd}}
	if cmd == "SWAPDB" {
		return Plan{Effects: effects}
	}
	return Plan{Kind: Run, Script: Flush, Args: args, Shape: AsIs, Effects: effects}
}

// isFlush: the commands that drop every lock of a database at once.
// SWAPDB is one: the locks a client holds in one database are gone from it.
func isFlush(name []byte) bool {
	return resp.EqualFold(name, "flushall") || resp.EqualFold(name, "flushdb") || resp.EqualFold(name, "swapdb")
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

// commandName is a command's name as refusals and effects say it: upper
// case, with control bytes and quotes as '?' (a name Valkey listed keys
// for has none; one a refusal quotes must not break its line).
func commandName(b []byte) string {
	n := []byte(strings.ToUpper(string(b)))
	for i, c := range n {
		if c < 0x20 || c == 0x7f || c == '"' {
			n[i] = '?'
		}
	}
	return string(n)
}
