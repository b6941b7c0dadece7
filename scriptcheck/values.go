package scriptcheck

import (
	"math"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// The abstract values the analysis computes for Lua expressions.

type vkind uint8

const (
	vTop         vkind = iota // anything: may be the name of a key the script receives
	vNil                      // nil
	vBool                     // true or false (b)
	vNum                      // a number constant (num)
	vData                     // computed from stored data or arithmetic: not a key name
	vArgData                  // computed from arguments, but not a name the proxy can rebuild
	vStr                      // a string built from constants, KEYS[n] and ARGV[n] (parts)
	vIter                     // the index of a loop over KEYS (s, start)
	vIterKey                  // KEYS[i] of such a loop (s, start)
	vRead                     // GET's reply: the current value of key s
	vField                    // HGET's reply on key s; arg: the field is an argument
	vFieldExists              // HEXISTS's reply on key s; arg: the field is an argument
	vExists                   // EXISTS's reply for the one key s
	vCreated                  // the reply of SET NX, SETNX or HSETNX on key s
	vMulti                    // MGET's reply: elems (the keys asked), or all (unpack(KEYS))
	vKeys                     // the KEYS table (a function's first parameter); as a spread: KEYS[start..]
	vArgv                     // the ARGV table (a function's second parameter); as a spread: ARGV[start..]
	vLenKeys                  // #KEYS
	vCond                     // a boolean, with the facts its truth (t) and falsity (f) imply
	vFunc                     // a function of the script
	vTable                    // a table built by a constructor
	vRedis                    // the redis (or server) table
	vRedisCall                // redis.call; b: redis.pcall
	vBuiltin                  // a library function (name)
	vLib                      // a library table: string, table, cjson, ... (name)
	vCalc                     // computed from constants by a function the analysis does not evaluate (string.char, arithmetic): may be any key's name, and is no token
)

type val struct {
	kind  vkind
	s     sym
	parts []Part
	arg   bool
	b     bool
	start int
	num   float64
	name  string
	elems []val
	all   bool
	t, f  facts
	fn    *fnVal
	tbl   *tblVal
}

type fnVal struct {
	e  *ast.FunctionExpr
	sc *scope
}

type tblVal struct {
	pos   []val
	named map[string]val
	dirty bool // changed after construction, or with elements the analysis could not list
}

var (
	top  = val{kind: vTop}
	nilV = val{kind: vNil}
	data = val{kind: vData}
	argD = val{kind: vArgData}
)

func strConst(s string) val { return val{kind: vStr, parts: []Part{{Kind: PartConst, Text: s}}} }
func keyRef(n int) val      { return val{kind: vStr, parts: []Part{{Kind: PartKey, Index: n}}} }
func argRef(n int) val      { return val{kind: vStr, parts: []Part{{Kind: PartArg, Index: n}}} }

func (v val) hasPart(k PartKind) bool {
	for _, p := range v.parts {
		if p.Kind == k {
			return true
		}
	}
	return false
}

// argLike: a value the script got from its arguments, so that comparing a
// key's value with it is a token check.
func (v val) argLike() bool {
	return v.kind == vArgData || v.kind == vStr && v.hasPart(PartArg) && !v.hasPart(PartKey)
}

// keyish: a value that may be the name of a key the script receives.
func (v val) keyish() bool {
	switch v.kind {
	case vTop, vIterKey, vKeys:
		return true
	case vStr:
		return v.hasPart(PartKey)
	}
	return false
}

// constant: nil, a boolean, a number or a constant string.
func (v val) constant() bool {
	switch v.kind {
	case vNil, vBool, vNum:
		return true
	case vStr:
		_, ok := v.constString()
		return ok
	}
	return false
}

func (v val) falsy() bool { return v.kind == vNil || v.kind == vBool && !v.b }

// constString is the value of a string (or number) constant.
func (v val) constString() (string, bool) {
	switch v.kind {
	case vNum:
		return formatNum(v.num), true
	case vStr:
		if len(v.parts) == 1 && v.parts[0].Kind == PartConst {
			return v.parts[0].Text, true
		}
		var b strings.Builder
		for _, p := range v.parts {
			if p.Kind != PartConst {
				return "", false
			}
			b.WriteString(p.Text)
		}
		return b.String(), true
	}
	return "", false
}

func (v val) intConst() (int, bool) {
	if v.kind != vNum || v.num != math.Trunc(v.num) || v.num < 1 || v.num > 1<<20 {
		return 0, false
	}
	return int(v.num), true
}

func (v val) isNum(n float64) bool { return v.kind == vNum && v.num == n }

func formatNum(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

func parseNum(s string) val {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return val{kind: vNum, num: f}
	}
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return val{kind: vNum, num: float64(n)}
	}
	if n, err := strconv.ParseUint(s, 0, 64); err == nil {
		return val{kind: vNum, num: float64(n)}
	}
	return data
}

// symOf is the identity of the key a value names, for facts.
func symOf(v val) (sym, bool) {
	switch v.kind {
	case vStr:
		if len(v.parts) == 1 && v.parts[0].Kind == PartKey {
			return sym{kind: symKey, n: v.parts[0].Index}, true
		}
		return sym{kind: symName, name: canon(v.parts)}, true
	case vIterKey:
		return v.s, true
	}
	return sym{}, false
}

func canon(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		switch p.Kind {
		case PartKey:
			b.WriteString("\x00K")
			b.WriteString(strconv.Itoa(p.Index))
		case PartArg:
			b.WriteString("\x00A")
			b.WriteString(strconv.Itoa(p.Index))
		default:
			b.WriteString("\x00C")
			b.WriteString(strconv.Itoa(len(p.Text)))
			b.WriteByte(':')
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// readOf is GET's reply for the key v names.
func readOf(v val, kind vkind) val {
	if s, ok := symOf(v); ok {
		return val{kind: kind, s: s}
	}
	return data
}

// concat is a .. b.
func concat(a, b val) val {
	ap, aok := strParts(a)
	bp, bok := strParts(b)
	if aok && bok {
		parts := make([]Part, 0, len(ap)+len(bp))
		parts = append(parts, ap...)
		for _, p := range bp {
			if n := len(parts); n > 0 && p.Kind == PartConst && parts[n-1].Kind == PartConst {
				parts[n-1].Text += p.Text
				continue
			}
			parts = append(parts, p)
		}
		return val{kind: vStr, parts: parts}
	}
	switch {
	case a.kind == vTop || b.kind == vTop || a.kind == vIterKey || b.kind == vIterKey:
		return top
	case a.kind == vArgData || b.kind == vArgData:
		if a.keyish() || b.keyish() {
			return top
		}
		return argD
	case a.stored() || b.stored():
		return data
	case a.argLike() || b.argLike():
		return argD
	}
	return val{kind: vCalc}
}

func strParts(v val) ([]Part, bool) {
	switch v.kind {
	case vStr:
		return v.parts, true
	case vNum:
		return []Part{{Kind: PartConst, Text: formatNum(v.num)}}, true
	}
	return nil, false
}

func sameVal(a, b val) bool {
	if a.kind != b.kind || a.s != b.s || a.arg != b.arg || a.b != b.b || a.start != b.start || a.num != b.num ||
		a.name != b.name || a.fn != b.fn || a.tbl != b.tbl || a.all != b.all {
		return false
	}
	switch a.kind {
	case vStr:
		return canon(a.parts) == canon(b.parts)
	case vCond, vMulti:
		return false
	}
	return true
}

// plain: a value that is never a key name (data, booleans, replies).
func (v val) plain() bool {
	switch v.kind {
	case vNil, vBool, vNum, vData, vCond, vRead, vField, vFieldExists, vExists, vCreated, vMulti:
		return true
	case vStr:
		_, ok := v.constString()
		return ok
	}
	return false
}

// stored: a value read from the data (a reply, or computed from one). A
// key name built from stored data is not followed (see the package
// comment).
func (v val) stored() bool {
	switch v.kind {
	case vData, vRead, vField, vFieldExists, vExists, vCreated, vMulti:
		return true
	}
	return false
}

// derived is what a function the analysis does not evaluate returns from
// args: anything when an argument may be a key the script receives, a
// value computed from arguments (a token, or a name the proxy cannot
// rebuild) when one is, stored data when one is, else a value computed
// from constants.
func derived(args []val) val {
	out := val{kind: vCalc}
	for _, v := range args {
		switch {
		case v.kind == vTop || v.keyish():
			return top
		case v.argLike():
			out = argD
		case v.stored() && out.kind == vCalc:
			out = data
		}
	}
	return out
}

// merge joins the values a variable may hold after two paths.
func merge(a, b val) val {
	switch {
	case sameVal(a, b):
		return a
	case a.kind == vStr && b.kind == vStr:
		return top // two different names: either may be a key
	case a.plain() && b.plain():
		return data
	case (a.argLike() || a.plain()) && (b.argLike() || b.plain()) && !a.keyish() && !b.keyish():
		return argD
	}
	return top
}

// get reads t[k].
func (t *tblVal) get(k val) val {
	if !t.dirty {
		if n, ok := k.intConst(); ok {
			if n <= len(t.pos) {
				return t.pos[n-1]
			}
			return nilV
		}
		if s, ok := k.constString(); ok && k.kind == vStr {
			if v, ok := t.named[s]; ok {
				return v
			}
			return nilV
		}
	}
	return t.any()
}

// any is what an element we cannot pick may be.
func (t *tblVal) any() val {
	out := data
	for _, v := range t.pos {
		if v.keyish() || v.kind == vIterKey {
			return top
		}
		if v.argLike() {
			out = argD
		}
	}
	for _, v := range t.named {
		if v.keyish() {
			return top
		}
		if v.argLike() {
			out = argD
		}
	}
	if t.dirty {
		return top
	}
	return out
}
