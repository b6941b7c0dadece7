package scriptcheck

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
)

// Verdict is what a script does to one key, were that key a lock.
type Verdict uint8

const (
	// Guarded: every delete, expiry change or overwrite of the key runs
	// only after a token (or owner field) check; or the script only reads
	// the key.
	Guarded Verdict = iota + 1
	// Acquire: the script only creates the key (SET NX, SETNX, HSETNX,
	// writes while the key is known not to exist).
	Acquire
	// Blind: some path deletes, expires or overwrites the key unchecked.
	Blind
	// Unknown: the analysis cannot tell.
	Unknown
)

var verdictNames = [...]string{"", "guarded", "acquire", "blind", "unknown"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) && v > 0 {
		return verdictNames[v]
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Worse reports whether v is worse than w (Blind, then Unknown, then
// Guarded, then Acquire).
func (v Verdict) Worse(w Verdict) bool { return v.rank() > w.rank() }

// rank orders verdicts for combining: the worst one wins.
func (v Verdict) rank() int {
	switch v {
	case Acquire:
		return 1
	case Guarded:
		return 2
	case Unknown:
		return 3
	case Blind:
		return 4
	}
	return 0
}

// Op is what a call does to its key.
type Op uint8

const (
	OpDelete    Op = iota + 1 // DEL, UNLINK, GETDEL, HDEL, RENAME's source, MOVE
	OpExpire                  // EXPIRE, PEXPIRE, PERSIST, GETEX with options, ...
	OpOverwrite               // SET without NX, HSET, HINCRBY, APPEND, ...
	OpCreate                  // SET NX, SETNX, HSETNX, MSETNX, RENAMENX's target
	OpOther                   // a command or command name the analysis does not know
	OpNone                    // no call: the analysis gave up (see Report.Err)
)

var opVerbs = [...]string{"", "deletes", "changes the expiry of", "overwrites", "creates", "may change", "may change"}

// Verb is the op as a verb phrase: "deletes", "changes the expiry of", ...
func (o Op) Verb() string {
	if int(o) < len(opVerbs) {
		return opVerbs[o]
	}
	return "may change"
}

// TargetKind says which key a site is about.
type TargetKind uint8

const (
	// TargetKey: KEYS[Index].
	TargetKey TargetKind = iota + 1
	// TargetKeysFrom: every key from KEYS[Index] on (unpack(KEYS), loops
	// over KEYS).
	TargetKeysFrom
	// TargetAny: a key the analysis cannot name; it may be any key, one
	// the script receives or not (see Report.Anywhere).
	TargetAny
	// TargetName: a key the script names itself, built from Parts.
	TargetName
	// TargetArgsFrom: every ARGV[j] from j = Index on, used as a key name
	// (unpack(ARGV)).
	TargetArgsFrom
)

// PartKind is one piece of a key name a script builds.
type PartKind uint8

const (
	PartConst PartKind = iota + 1 // Text
	PartKey                       // KEYS[Index]
	PartArg                       // ARGV[Index]
)

// Part is one piece of a built key name.
type Part struct {
	Kind  PartKind
	Index int
	Text  string
}

func (p Part) String() string {
	switch p.Kind {
	case PartKey:
		return "KEYS[" + strconv.Itoa(p.Index) + "]"
	case PartArg:
		return "ARGV[" + strconv.Itoa(p.Index) + "]"
	}
	return strconv.Quote(p.Text)
}

// Target is the key a site is about.
type Target struct {
	Kind  TargetKind
	Index int
	Parts []Part // TargetName
}

func (t Target) String() string {
	switch t.Kind {
	case TargetKey:
		return "KEYS[" + strconv.Itoa(t.Index) + "]"
	case TargetKeysFrom:
		if t.Index <= 1 {
			return "every key in KEYS"
		}
		return "every key from KEYS[" + strconv.Itoa(t.Index) + "]"
	case TargetAny:
		return "a key it cannot name"
	case TargetArgsFrom:
		return "every ARGV from ARGV[" + strconv.Itoa(t.Index) + "] as a key"
	case TargetName:
		ss := make([]string, len(t.Parts))
		for i, p := range t.Parts {
			ss[i] = p.String()
		}
		return strings.Join(ss, " .. ")
	}
	return "?"
}

// covers reports whether the target may be KEYS[i].
func (t Target) covers(i int) bool {
	switch t.Kind {
	case TargetKey:
		return t.Index == i
	case TargetKeysFrom:
		return i >= t.Index
	case TargetAny:
		return true
	}
	return false
}

// Named reports whether the target is a key name the script builds (or
// takes from ARGV) rather than one it receives in KEYS.
func (t Target) Named() bool { return t.Kind == TargetName || t.Kind == TargetArgsFrom }

// Names appends the key names a named target stands for, given the
// script's KEYS and ARGV. A name using a KEYS or ARGV entry the call does
// not have is skipped (the script would fail on it).
func (t Target) Names(keys, args [][]byte, dst [][]byte) [][]byte {
	switch t.Kind {
	case TargetArgsFrom:
		for j := t.Index; j <= len(args); j++ {
			dst = append(dst, args[j-1])
		}
	case TargetName:
		if len(t.Parts) == 1 {
			p := t.Parts[0]
			switch {
			case p.Kind == PartConst:
				return append(dst, []byte(p.Text))
			case p.Kind == PartArg && p.Index <= len(args):
				return append(dst, args[p.Index-1])
			case p.Kind == PartKey && p.Index <= len(keys):
				return append(dst, keys[p.Index-1])
			}
			return dst
		}
		var b []byte
		for _, p := range t.Parts {
			switch {
			case p.Kind == PartConst:
				b = append(b, p.Text...)
			case p.Kind == PartArg && p.Index <= len(args):
				b = append(b, args[p.Index-1]...)
			case p.Kind == PartKey && p.Index <= len(keys):
				b = append(b, keys[p.Index-1]...)
			default:
				return dst
			}
		}
		dst = append(dst, b)
	}
	return dst
}

// Site is one call that touches a key, with the verdict it earns there.
type Site struct {
	Line    int
	Command string // upper case; "" when the command name is not a literal
	Op      Op
	Target  Target
	Verdict Verdict
	Reason  string
}

// Report is the analysis of one script, or of one function of a library.
type Report struct {
	SHA      string // SHA1 of the script (for functions: of the library)
	Function string // the function's name; "" for scripts
	Library  string // the library's name; "" for scripts
	// Sites lists every call that deletes, expires, overwrites or creates
	// a key, or might; in source order.
	Sites []Site
	// Err says why the analysis gave up (the script does not parse, is too
	// large or too complex, uses goto or dynamic code); ErrLine is where.
	// Every key is then Unknown.
	Err     string
	ErrLine int
	// Flushes lists the calls of FLUSHALL, FLUSHDB and SWAPDB: they drop
	// every lock of a database, and follow the proxy's on_flush.
	Flushes []Site
	named   bool
}

// Anywhere returns the worst site that may change a key the analysis
// cannot name at all, received in KEYS or not (a name computed by a
// function it does not evaluate, a command name that is not a literal,
// redis.call reached in a way it cannot follow), or the reason it gave up:
// such a script may touch a lock of any rule. Nil when there is none.
func (r *Report) Anywhere() *Site {
	if r.Err != "" {
		return r.errSite()
	}
	var at *Site
	for j := range r.Sites {
		s := &r.Sites[j]
		if s.Target.Kind == TargetAny && (s.Verdict == Blind || s.Verdict == Unknown) &&
			(at == nil || s.Verdict.rank() > at.Verdict.rank()) {
			at = s
		}
	}
	return at
}

// Named reports whether some site is about a key the script names itself
// (see Target.Named): the proxy must then resolve names even when no key
// the script receives is a lock.
func (r *Report) Named() bool { return r.named }

// Key returns the verdict for KEYS[i] (1-based) and the site that decided
// it: the worst site, Blind before Unknown before Guarded before Acquire.
// A key no site touches is Guarded, with a nil site.
func (r *Report) Key(i int) (Verdict, *Site) {
	if r.Err != "" {
		return Unknown, r.errSite()
	}
	var at *Site
	for j := range r.Sites {
		s := &r.Sites[j]
		if s.Target.covers(i) && (at == nil || s.Verdict.rank() > at.Verdict.rank()) {
			at = s
		}
	}
	if at == nil {
		return Guarded, nil
	}
	return at.Verdict, at
}

// Writes reports whether some call may change KEYS[i] (1-based): every
// site is a delete, expiry change, overwrite or creation, or a call the
// analysis cannot read.
func (r *Report) Writes(i int) bool {
	if r.Err != "" {
		return true
	}
	for j := range r.Sites {
		if r.Sites[j].Target.covers(i) {
			return true
		}
	}
	return false
}

// Creates reports whether the script may create KEYS[i] (1-based): a
// call that creates it (SET NX, SETNX, HSETNX, ...) or that writes it
// while it is known not to exist (an acquisition).
func (r *Report) Creates(i int) bool {
	for j := range r.Sites {
		s := &r.Sites[j]
		if s.Target.covers(i) && s.Target.Kind != TargetAny && (s.Op == OpCreate || s.Verdict == Acquire) {
			return true
		}
	}
	return false
}

// Overall is the worst verdict over every site (Guarded when none).
func (r *Report) Overall() Verdict {
	if r.Err != "" {
		return Unknown
	}
	v := Guarded
	if len(r.Sites) > 0 {
		v = Acquire
	}
	for _, s := range r.Sites {
		if s.Verdict.rank() > v.rank() {
			v = s.Verdict
		}
	}
	return v
}

func (r *Report) errSite() *Site {
	return &Site{Line: r.ErrLine, Op: OpNone, Target: Target{Kind: TargetAny}, Verdict: Unknown, Reason: r.Err}
}

// SHA1 is the hex SHA1 of a script, as EVALSHA names it.
func SHA1(body string) string {
	sum := sha1.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

func sha1Bytes(body []byte) string {
	sum := sha1.Sum(body)
	return hex.EncodeToString(sum[:])
}
