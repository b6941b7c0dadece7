package policy

import (
	"fmt"
	"strings"
	"sync"
)

// Fencing is a rule's compiled fence section.
//
// Templates name keys relative to a lock key. Two placeholders are
// replaced; everything else is taken as written:
//
//	{key}   the lock key itself
//	{base}  the lock key without its pattern's literal prefix and suffix —
//	        what the wildcards matched. When the pattern's wildcard sits
//	        inside a hash tag ("{*}:lock"), the tag's braces stay in {base}
//	        ("{user:1}" for "{user:1}:lock"), so a template that starts with
//	        {base} lands in the lock's hash slot.
//
// The counter template gives one key per lock. Guard templates are globs in
// Valkey syntax after the placeholders are filled in ("{base}:*"); {base}
// and {key} are inserted with their glob characters escaped.
type Fencing struct {
	Counter        Template
	Guards         []Template
	Check          FenceCheck
	Mark           FenceMark
	UnfencedWrites UnfencedWrites

	// guardAny matches every key some lock of the rule guards: each guard
	// template with {base} and {key} replaced by the lock pattern's own glob.
	guardAny []*Pattern
	// ownAny matches every fence counter of the rule and its hash of
	// highest tokens (counter + ":high"), the same way.
	ownAny []*Pattern

	mu    sync.Mutex
	cache map[string][]*Pattern // lock key → its compiled guards
}

// Template is a key template split at its placeholders.
type Template struct {
	src   string
	parts []string // literal text; holes[i] goes between parts[i] and parts[i+1]
	holes []string // "base" or "key"
}

func parseTemplate(src string) (Template, error) {
	t := Template{src: src}
	rest := src
	for {
		i, hole := strings.Index(rest, "{base}"), "base"
		if k := strings.Index(rest, "{key}"); k >= 0 && (i < 0 || k < i) {
			i, hole = k, "key"
		}
		if i < 0 {
			t.parts = append(t.parts, rest)
			break
		}
		t.parts = append(t.parts, rest[:i])
		t.holes = append(t.holes, hole)
		rest = rest[i+len(hole)+2:]
	}
	if len(t.holes) == 0 {
		return t, fmt.Errorf("%q has no {base} or {key}: every lock would share it", src)
	}
	return t, nil
}

// String returns the template as written.
func (t Template) String() string { return t.src }

// Expand fills in the placeholders for one lock key (base from Rule.Base).
// With glob set, the inserted text has its glob characters escaped.
func (t Template) Expand(dst, key, base []byte, glob bool) []byte {
	for i, p := range t.parts {
		dst = append(dst, p...)
		if i < len(t.holes) {
			v := base
			if t.holes[i] == "key" {
				v = key
			}
			if glob {
				dst = appendGlobEscaped(dst, v)
			} else {
				dst = append(dst, v...)
			}
		}
	}
	return dst
}

func (t Template) expandString(key, base string) string {
	return string(t.Expand(nil, []byte(key), []byte(base), false))
}

func appendGlobEscaped(dst, v []byte) []byte {
	for _, c := range v {
		switch c {
		case '*', '?', '[', ']', '\\':
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// baseCut returns how much of a matching key's front and back are not
// {base}: the pattern's literal prefix and suffix, given back the braces of
// a hash tag that encloses the wildcards.
func (p *Pattern) baseCut() (front, back int) {
	pre, suf := p.prefix, p.suffix
	if i := strings.LastIndexByte(pre, '{'); i >= 0 && !strings.Contains(pre[i:], "}") {
		if j := strings.IndexByte(suf, '}'); j >= 0 {
			return i, len(suf) - j - 1
		}
	}
	return len(pre), len(suf)
}

// FenceBase returns the {base} of a key matching the rule's pattern.
func (r *Rule) FenceBase(key []byte) []byte {
	front, back := r.Pattern.baseCut()
	if len(key) < front+back {
		return nil
	}
	return key[front : len(key)-back]
}

// CounterKey is the fencing counter of a lock key under this rule.
func (f *Fencing) CounterKey(r *Rule, key []byte) []byte {
	return f.Counter.Expand(nil, key, r.FenceBase(key), false)
}

// MayGuard reports whether key is guarded by some lock of the rule.
func (f *Fencing) MayGuard(key []byte) bool {
	for _, g := range f.guardAny {
		if g.Match(key) {
			return true
		}
	}
	return false
}

// GuardingLocks returns the keys of the rule's locks that guard key: the
// candidates whose fencing records a fenced write checks, in Valkey. A
// guard template's text before its first placeholder is literal (see
// compileFence), so a lock's {base} or {key} stands in key right after it;
// each way of reading it back is kept when the lock it names matches the
// rule and guards key. Nearly always that is one lock.
func (f *Fencing) GuardingLocks(r *Rule, key []byte) [][]byte {
	var out [][]byte
	for _, g := range f.Guards {
		out = r.locksFrom(g, key, out, func(lock []byte) bool {
			// Once each, though several guards may name it.
			for _, l := range out {
				if string(l) == string(lock) {
					return false
				}
			}
			return f.GuardsKey(r, lock, key)
		})
	}
	return out
}

// OwnsKey reports whether key is the fence counter of one of the rule's
// locks, or that counter's hash of highest tokens: lockproxy's keys, which
// clients may read but not write.
func (f *Fencing) OwnsKey(r *Rule, key []byte) bool {
	any := false
	for _, p := range f.ownAny {
		any = any || p.Match(key)
	}
	if !any {
		return false
	}
	own := func(k []byte) bool {
		return len(r.locksFrom(f.Counter, k, nil, func(lock []byte) bool {
			return string(f.CounterKey(r, lock)) == string(k)
		})) > 0
	}
	if own(key) {
		return true
	}
	high, ok := strings.CutSuffix(string(key), HighSuffix)
	return ok && own([]byte(high))
}

// HighSuffix names a fence counter's hash of highest tokens: the counter's
// name with this suffix.
const HighSuffix = ":high"

// locksFrom appends to out every lock key of r that template t, filled in
// for it, could have produced key from and that keep accepts.
func (r *Rule) locksFrom(t Template, key []byte, out [][]byte, keep func(lock []byte) bool) [][]byte {
	p0 := t.parts[0]
	if len(key) < len(p0) || string(key[:len(p0)]) != p0 {
		return out
	}
	front, back := r.Pattern.baseCut()
	pre, suf := r.Pattern.prefix[:front], r.Pattern.suffix[len(r.Pattern.suffix)-back:]
	buf := make([]byte, 0, len(pre)+len(key)+len(suf))
	for end := len(p0); end <= len(key); end++ {
		v := key[len(p0):end]
		lock := v
		if t.holes[0] == "base" {
			lock = append(append(append(buf[:0], pre...), v...), suf...)
			if !r.Pattern.Match(lock) || string(r.FenceBase(lock)) != string(v) {
				continue
			}
		} else if !r.Pattern.Match(lock) {
			continue
		}
		if keep(lock) {
			out = append(out, append([]byte(nil), lock...))
		}
	}
	return out
}

// GuardsKey reports whether lock (a key of the rule) guards key. The guard
// patterns of a lock are compiled once and kept in a small cache: a holder
// writes many times under one grant.
func (f *Fencing) GuardsKey(r *Rule, lock, key []byte) bool {
	for _, pat := range f.guardsOf(r, lock) {
		if pat.Match(key) {
			return true
		}
	}
	return false
}

// guardCacheMax bounds the cache of compiled guard patterns; past it the
// cache starts afresh, so memory stays bounded with any number of locks.
const guardCacheMax = 4096

func (f *Fencing) guardsOf(r *Rule, lock []byte) []*Pattern {
	f.mu.Lock()
	pats, ok := f.cache[string(lock)]
	f.mu.Unlock()
	if ok {
		return pats
	}
	base := r.FenceBase(lock)
	pats = make([]*Pattern, 0, len(f.Guards))
	for _, g := range f.Guards {
		pats = append(pats, CompileAny(string(g.Expand(nil, lock, base, true))))
	}
	f.mu.Lock()
	if f.cache == nil || len(f.cache) >= guardCacheMax {
		f.cache = map[string][]*Pattern{}
	}
	f.cache[string(lock)] = pats
	f.mu.Unlock()
	return pats
}

// compileFence checks a rule's fence section against its pattern.
func compileFence(pat *Pattern, fc *FenceConfig) (*Fencing, error) {
	f := &Fencing{Check: fc.Check, Mark: fc.Mark, UnfencedWrites: fc.UnfencedWrites}
	var err error
	if f.Counter, err = parseTemplate(fc.Counter); err != nil {
		return nil, fmt.Errorf("counter: %v", err)
	}
	// A sample lock key shows which hash slot a lock's keys must share.
	lockSample := sample(pat.src)
	r := &Rule{Pattern: pat}
	base := string(r.FenceBase([]byte(lockSample)))
	tag := hashTag(lockSample)
	if ct := hashTag(f.Counter.expandString(lockSample, base)); tag != "" && ct != tag {
		return nil, fmt.Errorf("counter: %q puts the counter of lock %q outside the lock's hash slot (tag %q); start it with {base} or {key}", fc.Counter, lockSample, tag)
	}
	front, back := pat.baseCut()
	baseGlob := globMiddle(pat.src, len(pat.prefix)-front, len(pat.suffix)-back)
	for i, g := range fc.Guards {
		t, err := parseTemplate(g)
		if err != nil {
			return nil, fmt.Errorf("guards[%d]: %v", i, err)
		}
		if gt := hashTag(sample(t.expandString(lockSample, base))); tag != "" && gt != tag {
			return nil, fmt.Errorf("guards[%d]: %q guards keys outside the lock's hash slot (tag %q); start it with {base} or {key}", i, g, tag)
		}
		if strings.ContainsAny(t.parts[0], "*?[\\") {
			return nil, fmt.Errorf("guards[%d]: %q has a wildcard before its first {base} or {key}; the text before it must be literal, so that lockproxy can tell from a guarded key which lock guards it", i, g)
		}
		f.Guards = append(f.Guards, t)
		f.guardAny = append(f.guardAny, CompileAny(t.any(pat.src, baseGlob, true)))
	}
	counterAny := f.Counter.any(pat.src, baseGlob, false)
	f.ownAny = []*Pattern{CompileAny(counterAny), CompileAny(counterAny + HighSuffix)}
	return f, nil
}

// any is the glob of every key the template gives for the locks of a
// pattern: each placeholder replaced by the pattern's own glob (src for
// {key}, baseGlob for {base}). A guard template is a glob already; a
// counter's literal text is escaped first (glob false).
func (t Template) any(src, baseGlob string, glob bool) string {
	var b []byte
	for j, p := range t.parts {
		if glob {
			b = append(b, p...)
		} else {
			b = appendGlobEscaped(b, []byte(p))
		}
		if j < len(t.holes) {
			if t.holes[j] == "key" {
				b = append(b, src...)
			} else {
				b = append(b, baseGlob...)
			}
		}
	}
	return string(b)
}

// globMiddle returns the part of a glob's source between its literal prefix
// and suffix, widened by the tag braces given back to {base} (keep bytes of
// each side). Braces are plain characters in a glob, so they are copied as
// they are.
func globMiddle(src string, keepFront, keepBack int) string {
	start, end := literalSourceBounds(src)
	start -= keepFront
	end += keepBack
	if start < 0 || end > len(src) || start > end {
		return "*"
	}
	return src[start:end]
}

// literalSourceBounds finds where the first wildcard starts and the last one
// ends in a glob's source.
func literalSourceBounds(src string) (first, lastEnd int) {
	first, lastEnd = -1, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '*', '?':
			if first < 0 {
				first = i
			}
			lastEnd = i + 1
		case '[':
			if first < 0 {
				first = i
			}
			j := i + 1
			if j < len(src) && src[j] == '^' {
				j++
			}
			for ; j < len(src) && src[j] != ']'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			i = j
			lastEnd = min(j+1, len(src))
		}
	}
	if first < 0 {
		return len(src), len(src)
	}
	return first, lastEnd
}

// sample turns a glob into one key it matches: each wildcard becomes
// "sample" (a class, its first member).
func sample(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteByte(glob[i])
			}
		case '*':
			b.WriteString("sample")
		case '?':
			b.WriteByte('s')
		case '[':
			j := i + 1
			if j < len(glob) && glob[j] == '^' {
				b.WriteByte(0x01)
				for ; j < len(glob) && glob[j] != ']'; j++ {
				}
			} else if j < len(glob) {
				if glob[j] == '\\' && j+1 < len(glob) {
					j++
				}
				b.WriteByte(glob[j])
				for ; j < len(glob) && glob[j] != ']'; j++ {
				}
			}
			i = j
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hashTag is Valkey's keyHashSlot rule: the text between the first '{' and
// the first '}' after it, when not empty; "" when the key has no tag.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return ""
	}
	return key[i+1 : i+1+j]
}

// Notes says what check-config should tell about the rules that is not an
// error: today, the fence guards that also match the rule's own fence
// counter or its hash of highest tokens. Those keys stay lockproxy's —
// clients' writes to them are refused, so the guard never applies to them.
func (rs *Rules) Notes() []string {
	var out []string
	for i := range rs.All() {
		r := &rs.All()[i]
		f := r.Fencing
		if f == nil {
			continue
		}
		lock := []byte(sample(r.Pattern.src))
		counter := f.CounterKey(r, lock)
		for j, g := range f.Guards {
			guard := CompileAny(string(g.Expand(nil, lock, r.FenceBase(lock), true)))
			for _, own := range [][]byte{counter, append(append([]byte(nil), counter...), HighSuffix...)} {
				if guard.Match(own) {
					out = append(out, fmt.Sprintf("rule %d %q: guards[%d] %q also matches the lock's fence counter %q (or its %q mark); those are lockproxy's keys: clients' writes to them are refused (LOCKED) and the guard does not apply to them",
						r.Index+1, r.Pattern.src, j, g.src, f.Counter.src, HighSuffix))
					break
				}
			}
		}
	}
	return out
}

// GuardGlobs are globs that match every key some lock of the rule guards
// (and perhaps more): for a script monitor's quick test of an argument.
func (f *Fencing) GuardGlobs() []*Pattern { return f.guardAny }

// OwnGlobs are globs that match every fence counter of the rule and its
// hash of highest tokens (and perhaps more).
func (f *Fencing) OwnGlobs() []*Pattern { return f.ownAny }
