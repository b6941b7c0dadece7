package policy

import (
	"bytes"
	"fmt"
	"strconv"
)

// maxNesting is Valkey's recursion cap in stringmatchlen_impl: a '*' more
// than this many star groups deep gives up and reports "no match" (its
// protection against abusive patterns). The general matcher keeps the cap so
// that it answers as the server does even for such patterns.
const maxNesting = 1000

// patternKind selects how Match runs. Lock patterns are nearly always a
// literal with one '*', so those shapes get a couple of byte comparisons
// instead of the backtracking matcher.
type patternKind uint8

const (
	kindGeneral      patternKind = iota // anything else: the stringmatchlen port
	kindLiteral                         // no wildcard: the key equals prefix
	kindAll                             // exactly "*": every key, the empty key too (KEYS/SCAN shortcut)
	kindNonEmpty                        // "**", "***", ...: every key except the empty one
	kindPrefix                          // "prefix*"
	kindSuffix                          // "*suffix"
	kindPrefixSuffix                    // "prefix*suffix"
	kindContains                        // "*infix*"
)

// Pattern is a compiled Valkey glob pattern. It is immutable and safe for
// concurrent use.
type Pattern struct {
	src    string
	kind   patternKind
	prefix string // literal bytes (escapes resolved) every matching key starts with
	suffix string // literal bytes every matching key ends with, after the last wildcard
	infix  []byte // kindContains only; a []byte so bytes.Contains needs no conversion
	minLen int    // bytes a key needs at least: every token but '*' eats exactly one
	first  int    // the byte every matching key starts with, or -1 when not fixed
	last   int    // the byte every matching key ends with, or -1 when not fixed
}

// PatternError explains why [Compile] refused a pattern.
type PatternError struct {
	Pattern string
	Offset  int // byte offset in Pattern of the offending construct
	Msg     string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %s: %s", strconv.Quote(e.Pattern), e.Msg)
}

// Compile compiles a lock-key pattern written by an operator.
//
// Valkey accepts every byte string as a pattern, but a few of them mean
// something no one would write on purpose, so Compile refuses those with an
// explanation rather than silently protecting the wrong keys:
//   - the empty pattern (it matches only the empty key);
//   - an unterminated class such as "lock[abc" (Valkey treats the rest of the
//     pattern as the class);
//   - the empty class "[]" (it never matches; POSIX users expect "[]a]");
//   - a trailing lone backslash (Valkey matches it literally);
//   - a range with one end below 0x80 and the other at or above it, such as
//     "[a-\xff]": Valkey compares range ends as C chars, which are signed on
//     x86 and unsigned on ARM, so the keys it covers depend on the CPU;
//   - more than 1000 '*' groups, where Valkey stops matching (see maxNesting).
//
// Use [CompileAny] for patterns that come from clients (KEYS, SCAN MATCH),
// which must be interpreted exactly as the server would, whatever they are.
func Compile(pattern string) (*Pattern, error) {
	if pattern == "" {
		return nil, &PatternError{Pattern: pattern, Msg: "is empty; an empty pattern matches only the empty key"}
	}
	p, toks := compile(pattern)
	stars := 0
	for _, t := range toks {
		switch t.kind {
		case tokStar:
			stars++
		case tokClass:
			if t.unterminated {
				return nil, &PatternError{Pattern: pattern, Offset: t.start,
					Msg: fmt.Sprintf(`"[" at offset %d has no closing "]"; write \[ to match a literal "["`, t.start)}
			}
			if t.end-t.start == 2 { // exactly "[]"
				return nil, &PatternError{Pattern: pattern, Offset: t.start,
					Msg: fmt.Sprintf(`"[]" at offset %d is an empty class and never matches; write \] inside a class to match "]"`, t.start)}
			}
			if off, ok := straddlingRange(pattern, t); ok {
				return nil, &PatternError{Pattern: pattern, Offset: off,
					Msg: fmt.Sprintf("range %s at offset %d mixes bytes below and above 0x80; Valkey compares range ends as signed chars on x86 and unsigned on ARM, so the keys it covers depend on the server's CPU",
						strconv.Quote(pattern[off:off+3]), off)}
			}
		case tokLit:
			if t.loneBackslash {
				return nil, &PatternError{Pattern: pattern, Offset: t.start,
					Msg: fmt.Sprintf(`ends with a lone "\" at offset %d; write \\ to match a backslash`, t.start)}
			}
		}
	}
	if stars > maxNesting {
		return nil, &PatternError{Pattern: pattern,
			Msg: fmt.Sprintf("has %d '*' groups; Valkey stops matching beyond %d", stars, maxNesting)}
	}
	return p, nil
}

// CompileAny compiles any pattern, giving it exactly the meaning Valkey's
// KEYS gives it, quirks included (see [Compile] for the quirks). Every byte
// string is a valid Valkey pattern, so it cannot fail.
func CompileAny(pattern string) *Pattern {
	p, _ := compile(pattern)
	return p
}

// MustCompile is [Compile] for patterns fixed in code; it panics on error.
func MustCompile(pattern string) *Pattern {
	p, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.src }

// IsLiteral reports whether the pattern has no wildcard, so it matches
// exactly one key (the one its LiteralParts prefix spells).
func (p *Pattern) IsLiteral() bool { return p.kind == kindLiteral }

// LiteralParts returns the literal bytes, escapes resolved, that every
// matching key starts with (before the first wildcard) and ends with (after
// the last wildcard). For "lock:*:{x}" they are "lock:" and ":{x}"; for a
// literal pattern the whole key is the prefix and the suffix is empty. The
// two never overlap in a matching key: each of their bytes is matched by a
// different pattern token.
func (p *Pattern) LiteralParts() (prefix, suffix string) { return p.prefix, p.suffix }

// Base returns key without the pattern's literal prefix and suffix — the part
// the wildcards matched, which fencing templates call {base}. For a key that
// cannot match (too short, or the literal parts differ) it returns nil, false.
// The result aliases key.
func (p *Pattern) Base(key []byte) ([]byte, bool) {
	np, ns := len(p.prefix), len(p.suffix)
	if len(key) < np+ns || string(key[:np]) != p.prefix || string(key[len(key)-ns:]) != p.suffix {
		return nil, false
	}
	return key[np : len(key)-ns], true
}

// Match reports whether Valkey's KEYS with this pattern would list key. It
// does not allocate.
func (p *Pattern) Match(key []byte) bool {
	// string(b) in a comparison does not allocate; the compiler compares the
	// bytes in place.
	switch p.kind {
	case kindLiteral:
		return string(key) == p.prefix
	case kindAll:
		return true
	case kindNonEmpty:
		return len(key) > 0
	case kindPrefix:
		return len(key) >= len(p.prefix) && string(key[:len(p.prefix)]) == p.prefix
	case kindSuffix:
		return len(key) >= len(p.suffix) && string(key[len(key)-len(p.suffix):]) == p.suffix
	case kindPrefixSuffix:
		return len(key) >= len(p.prefix)+len(p.suffix) &&
			string(key[:len(p.prefix)]) == p.prefix &&
			string(key[len(key)-len(p.suffix):]) == p.suffix
	case kindContains:
		return bytes.Contains(key, p.infix)
	}
	// The literal parts and length only reject: every match has them, so the
	// checks change no answer, they just skip the backtracking for keys that
	// obviously differ.
	if len(key) < p.minLen ||
		string(key[:len(p.prefix)]) != p.prefix ||
		string(key[len(key)-len(p.suffix):]) != p.suffix {
		return false
	}
	return matchGeneral(p.src, key, 0) == resMatch
}

// matchValkey is the reference: what KEYS answers. KEYS (and SCAN) skip
// matching altogether for the one-byte pattern "*", which is why "*" lists
// the empty key while stringmatchlen("*", "") — and so "**" — does not.
func matchValkey(pattern string, key []byte) bool {
	if pattern == "*" {
		return true
	}
	return matchGeneral(pattern, key, 0) == resMatch
}

// result is stringmatchlen_impl's answer. resAbort stands for its
// skipLongerMatches flag: once a '*' has tried every start position for the
// rest of the pattern and failed, no earlier '*' can do better, so every frame
// above gives up at once. The flag is only ever raised on the way to an
// overall "no match", which is why a return value can replace it.
type result uint8

const (
	resNoMatch result = iota
	resMatch
	resAbort
)

// matchGeneral is a line-for-line port of Valkey's stringmatchlen_impl
// (src/util.c) with nocase = 0, indices in place of pointers. Reading past
// the end of pattern in C would see the NUL terminator; the bounds checks
// below reproduce what that NUL would have done.
func matchGeneral(pat string, s []byte, nesting int) result {
	if nesting > maxNesting {
		return resNoMatch
	}
	pi, si := 0, 0
	for pi < len(pat) && si < len(s) {
		switch pat[pi] {
		case '*':
			for pi+1 < len(pat) && pat[pi+1] == '*' {
				pi++
			}
			if pi == len(pat)-1 {
				return resMatch // a trailing '*' takes whatever is left
			}
			for si < len(s) {
				switch matchGeneral(pat[pi+1:], s[si:], nesting+1) {
				case resMatch:
					return resMatch
				case resAbort:
					return resAbort
				}
				si++
			}
			return resAbort
		case '?':
			si++
		case '[':
			pi++
			not := pi < len(pat) && pat[pi] == '^'
			if not {
				pi++
			}
			match := false
			for {
				if len(pat)-pi >= 2 && pat[pi] == '\\' {
					pi++
					if pat[pi] == s[si] {
						match = true
					}
				} else if pi == len(pat) {
					// Unterminated class: step back so that the shared
					// advance after the switch lands exactly on the end.
					pi--
					break
				} else if pat[pi] == ']' {
					break
				} else if len(pat)-pi >= 3 && pat[pi+1] == '-' {
					// C reads the ends through (signed) char on x86, where
					// Valkey runs: bytes >= 0x80 sort below 0x00.
					start, end, c := int8(pat[pi]), int8(pat[pi+2]), int8(s[si])
					if start > end {
						start, end = end, start
					}
					pi += 2
					if c >= start && c <= end {
						match = true
					}
				} else if pat[pi] == s[si] {
					match = true
				}
				pi++
			}
			if not {
				match = !match
			}
			if !match {
				return resNoMatch
			}
			si++
		case '\\':
			if len(pat)-pi >= 2 {
				pi++
			}
			fallthrough
		default:
			if pat[pi] != s[si] {
				return resNoMatch
			}
			si++
		}
		pi++
		if si == len(s) {
			for pi < len(pat) && pat[pi] == '*' {
				pi++
			}
			break
		}
	}
	if pi == len(pat) && si == len(s) {
		return resMatch
	}
	return resNoMatch
}

type tokKind uint8

const (
	tokLit   tokKind = iota // one literal byte (possibly escaped)
	tokAny                  // '?'
	tokStar                 // a run of '*'
	tokClass                // '[' ... ']'
)

type token struct {
	kind          tokKind
	b             byte // tokLit: the byte it matches
	start, end    int  // span in the pattern
	unterminated  bool // tokClass without its ']' (runs to the end of the pattern)
	loneBackslash bool // tokLit: a '\' with nothing after it
}

// tokenize splits a pattern the way matchGeneral walks it. Classes in
// particular must end where the matcher ends them: "[a-]b]" is one class
// holding the range 'a'..']' and the byte 'b', because the matcher takes the
// ']' as the end of a range before it could look at it as the closing bracket.
func tokenize(pat string) []token {
	var toks []token
	for i := 0; i < len(pat); {
		switch pat[i] {
		case '*':
			j := i
			for j < len(pat) && pat[j] == '*' {
				j++
			}
			toks = append(toks, token{kind: tokStar, start: i, end: j})
			i = j
		case '?':
			toks = append(toks, token{kind: tokAny, start: i, end: i + 1})
			i++
		case '[':
			end, unterminated := scanClass(pat, i)
			toks = append(toks, token{kind: tokClass, start: i, end: end, unterminated: unterminated})
			i = end
		case '\\':
			if i+1 < len(pat) {
				toks = append(toks, token{kind: tokLit, b: pat[i+1], start: i, end: i + 2})
				i += 2
			} else {
				toks = append(toks, token{kind: tokLit, b: '\\', start: i, end: i + 1, loneBackslash: true})
				i++
			}
		default:
			toks = append(toks, token{kind: tokLit, b: pat[i], start: i, end: i + 1})
			i++
		}
	}
	return toks
}

// scanClass returns the end (exclusive) of the class opening at pat[i], in
// the same order of checks as the matcher: escape, end of pattern, ']',
// range, single byte.
func scanClass(pat string, i int) (end int, unterminated bool) {
	j := i + 1
	if j < len(pat) && pat[j] == '^' {
		j++
	}
	for {
		switch {
		case len(pat)-j >= 2 && pat[j] == '\\':
			j += 2
		case j == len(pat):
			return j, true
		case pat[j] == ']':
			return j + 1, false
		case len(pat)-j >= 3 && pat[j+1] == '-':
			j += 3
		default:
			j++
		}
	}
}

// straddlingRange finds a range inside class t whose ends lie on both sides
// of 0x80, returning its offset.
func straddlingRange(pat string, t token) (int, bool) {
	j := t.start + 1
	if j < t.end && pat[j] == '^' {
		j++
	}
	for j < t.end {
		switch {
		case len(pat)-j >= 2 && pat[j] == '\\':
			j += 2
		case pat[j] == ']':
			return 0, false
		case len(pat)-j >= 3 && pat[j+1] == '-':
			if (pat[j] < 0x80) != (pat[j+2] < 0x80) {
				return j, true
			}
			j += 3
		default:
			j++
		}
	}
	return 0, false
}

// compile tokenizes pat and picks the fastest Match strategy that gives the
// same answers as the general matcher (FuzzGlob checks that they do).
func compile(pat string) (*Pattern, []token) {
	toks := tokenize(pat)
	p := &Pattern{src: pat, first: -1, last: -1}

	// Leading and trailing literal tokens.
	lead := 0
	for lead < len(toks) && toks[lead].kind == tokLit {
		lead++
	}
	trail := len(toks)
	for trail > lead && toks[trail-1].kind == tokLit {
		trail--
	}
	p.prefix = literalBytes(toks[:lead])
	p.suffix = literalBytes(toks[trail:])
	for _, t := range toks {
		if t.kind != tokStar {
			p.minLen++
		}
	}
	if p.prefix != "" {
		p.first = int(p.prefix[0])
	}
	if p.suffix != "" {
		p.last = int(p.suffix[len(p.suffix)-1])
	}
	middle := toks[lead:trail]

	switch {
	case len(middle) == 0: // no wildcard at all
		p.kind = kindLiteral
		if p.prefix != "" {
			p.last = int(p.prefix[len(p.prefix)-1])
		}
	case len(middle) == 1 && middle[0].kind == tokStar:
		switch {
		case pat == "*":
			p.kind = kindAll
		case p.prefix == "" && p.suffix == "":
			p.kind = kindNonEmpty
		case p.suffix == "":
			p.kind = kindPrefix
		case p.prefix == "":
			p.kind = kindSuffix
		default:
			p.kind = kindPrefixSuffix
		}
	case lead == 0 && trail == len(toks) && len(middle) >= 3 &&
		middle[0].kind == tokStar && middle[len(middle)-1].kind == tokStar &&
		allLiteral(middle[1:len(middle)-1]):
		p.kind = kindContains
		p.infix = []byte(literalBytes(middle[1 : len(middle)-1]))
	default:
		p.kind = kindGeneral
	}
	return p, toks
}

func allLiteral(toks []token) bool {
	for _, t := range toks {
		if t.kind != tokLit {
			return false
		}
	}
	return true
}

func literalBytes(toks []token) string {
	b := make([]byte, len(toks))
	for i, t := range toks {
		b[i] = t.b
	}
	return string(b)
}
