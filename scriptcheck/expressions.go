package scriptcheck

import (
	"github.com/yuin/gopher-lua/ast"
)

func isMulti(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.FuncCallExpr:
		return !x.AdjustRet
	case *ast.Comma3Expr:
		return !x.AdjustRet
	}
	return false
}

// exprList evaluates an expression list into exactly n values.
func (a *analyzer) exprList(exprs []ast.Expr, sc *scope, fs facts, n int, ctx int) []val {
	out := make([]val, 0, max(n, len(exprs)))
	rest := nilV
	for i, e := range exprs {
		if i == len(exprs)-1 && isMulti(e) {
			vals, r := a.multi(e, sc, fs)
			out = append(out, vals...)
			rest = r
			continue
		}
		out = append(out, a.value(e, sc, fs, ctx))
	}
	restStart := len(out)
	for len(out) < n {
		out = append(out, spreadElem(rest, len(out)-restStart))
	}
	return out[:n]
}

// spreadElem is element i (0-based) of a spread of values.
func spreadElem(rest val, i int) val {
	switch rest.kind {
	case vKeys:
		return keyRef(rest.start + i)
	case vArgv:
		return argRef(rest.start + i)
	}
	return rest
}

func (a *analyzer) multi(e ast.Expr, sc *scope, fs facts) ([]val, val) {
	switch x := e.(type) {
	case *ast.Comma3Expr:
		if a.inFunc > 0 {
			return nil, top
		}
		return nil, nilV
	case *ast.FuncCallExpr:
		vals, rest, _, _ := a.call(x, sc, fs)
		return vals, rest
	}
	return []val{a.value(e, sc, fs, ctxValue)}, nilV
}

type argList struct {
	vals   []val
	spread val // further arguments, as one value (vKeys/vArgv: KEYS/ARGV from start); vNil when none
}

func (al argList) from(i int) argList {
	if i >= len(al.vals) {
		return argList{spread: al.spread}
	}
	return argList{vals: al.vals[i:], spread: al.spread}
}

func (a *analyzer) argList(exprs []ast.Expr, sc *scope, fs facts) argList {
	al := argList{spread: nilV}
	for i, e := range exprs {
		if i == len(exprs)-1 && isMulti(e) {
			vals, rest := a.multi(e, sc, fs)
			al.vals = append(al.vals, vals...)
			al.spread = rest
			continue
		}
		al.vals = append(al.vals, a.value(e, sc, fs, ctxValue))
	}
	return al
}

func first(vals []val, rest val) val {
	if len(vals) > 0 {
		return vals[0]
	}
	return spreadElem(rest, 0)
}

// value evaluates e to one value.
func (a *analyzer) value(e ast.Expr, sc *scope, fs facts, ctx int) val {
	v, _, _ := a.expr(e, sc, fs, ctx)
	return v
}

// expr evaluates e, with the facts that hold when it is true and when it
// is false. Calls inside e are analysed with the facts that hold where
// they run (the right of `and` runs only when the left is true).
func (a *analyzer) expr(e ast.Expr, sc *scope, fs facts, ctx int) (val, facts, facts) {
	a.enter(e.Line())
	defer a.leave()
	switch x := e.(type) {
	case *ast.LogicalOpExpr:
		lv, lt, lf := a.expr(x.Lhs, sc, fs, ctxValue)
		if x.Operator == "and" {
			rv, rt, rf := a.expr(x.Rhs, sc, lt, ctxValue)
			f := lf.or(rf)
			v := val{kind: vCond, t: rt, f: f}
			switch {
			case rv.argLike() && !lv.keyish():
				v = argD
			case !lv.plain() || !rv.plain():
				v = top
			}
			return v, rt, f
		}
		rv, rt, rf := a.expr(x.Rhs, sc, lf, ctxValue)
		t := lt.or(rt)
		v := val{kind: vCond, t: t, f: rf}
		switch {
		case lv.argLike() && (rv.argLike() || rv.constant()):
			// ARGV[1] or 'default'. Not ARGV[1] or <a key's value>: with
			// no ARGV[1] that compares the value with itself.
			v = argD
		case !lv.plain() || !rv.plain():
			v = top
		}
		return v, t, rf
	case *ast.UnaryNotOpExpr:
		_, t, f := a.expr(x.Expr, sc, fs, ctxValue)
		return val{kind: vCond, t: f, f: t}, f, t
	case *ast.RelationalOpExpr:
		lv := a.value(x.Lhs, sc, fs, ctxValue)
		rv := a.value(x.Rhs, sc, fs, ctxValue)
		t, f := fs, fs
		switch x.Operator {
		case "==":
			t, f = compare(lv, rv, fs)
		case "~=":
			f, t = compare(lv, rv, fs)
		}
		return val{kind: vCond, t: t, f: f}, t, f
	}
	v := a.simple(e, sc, fs, ctx)
	t, f := truth(v, fs)
	return v, t, f
}

// truth: the facts when v is truthy, and when it is falsy.
func truth(v val, fs facts) (facts, facts) {
	switch v.kind {
	case vCond:
		return fs.and(v.t), fs.and(v.f)
	case vRead:
		return fs, fs.with(v.s, fFresh) // GET answers false for a missing key
	case vField:
		if v.arg {
			return fs.with(v.s, fGuard), fs // the caller's owner field exists
		}
	case vCreated:
		return fs.with(v.s, fFresh), fs
	}
	return fs, fs
}

// compare: the facts when l == r holds, and when it does not.
func compare(l, r val, fs facts) (facts, facts) {
	if t, f, ok := compare1(l, r, fs); ok {
		return t, f
	}
	if t, f, ok := compare1(r, l, fs); ok {
		return t, f
	}
	return fs, fs
}

func compare1(k, o val, fs facts) (facts, facts, bool) {
	switch k.kind {
	case vRead:
		switch {
		case o.argLike():
			return fs.with(k.s, fGuard), fs, true
		case o.falsy():
			return fs.with(k.s, fFresh), fs, true
		}
	case vField:
		switch {
		case o.argLike():
			return fs.with(k.s, fGuard), fs, true
		case k.arg && o.falsy():
			return fs, fs.with(k.s, fGuard), true
		case k.arg && o.plain() && o.kind != vData && o.kind != vCond:
			return fs.with(k.s, fGuard), fs, true
		}
	case vFieldExists:
		switch {
		case k.arg && o.isNum(1):
			return fs.with(k.s, fGuard), fs, true
		case k.arg && o.isNum(0):
			return fs, fs.with(k.s, fGuard), true
		}
	case vExists:
		switch {
		case o.isNum(0):
			return fs.with(k.s, fFresh), fs, true
		case o.isNum(1):
			return fs, fs.with(k.s, fFresh), true
		}
	case vCreated:
		switch {
		case o.isNum(1):
			return fs.with(k.s, fFresh), fs, true
		case o.isNum(0), o.falsy():
			return fs, fs.with(k.s, fFresh), true
		}
	case vCond:
		if o.kind == vBool {
			if o.b {
				return fs.and(k.t), fs.and(k.f), true
			}
			return fs.and(k.f), fs.and(k.t), true
		}
	}
	return nil, nil, false
}

func (a *analyzer) simple(e ast.Expr, sc *scope, fs facts, ctx int) val {
	switch x := e.(type) {
	case *ast.NilExpr:
		return nilV
	case *ast.TrueExpr:
		return val{kind: vBool, b: true}
	case *ast.FalseExpr:
		return val{kind: vBool}
	case *ast.NumberExpr:
		return parseNum(x.Value)
	case *ast.StringExpr:
		return strConst(x.Value)
	case *ast.Comma3Expr:
		if a.inFunc > 0 {
			return top
		}
		return nilV
	case *ast.IdentExpr:
		if b := sc.lookup(x.Value); b != nil {
			if b.v.kind == vFunc && ctx == ctxValue {
				a.escape(b.v.fn)
			}
			return b.v
		}
		return a.global(x.Value, x.Line())
	case *ast.AttrGetExpr:
		obj := a.value(x.Object, sc, fs, ctxBind)
		key := a.value(x.Key, sc, fs, ctxValue)
		v := a.index(obj, key, x.Line())
		if v.kind == vFunc && ctx == ctxValue {
			a.escape(v.fn)
		}
		return v
	case *ast.TableExpr:
		return a.table(x, sc, fs)
	case *ast.FuncCallExpr:
		vals, rest, _, _ := a.call(x, sc, fs)
		return first(vals, rest)
	case *ast.StringConcatOpExpr:
		l := a.value(x.Lhs, sc, fs, ctxValue)
		r := a.value(x.Rhs, sc, fs, ctxValue)
		return concat(l, r)
	case *ast.ArithmeticOpExpr:
		l := a.value(x.Lhs, sc, fs, ctxValue)
		r := a.value(x.Rhs, sc, fs, ctxValue)
		if l.stored() || r.stored() {
			return data
		}
		return val{kind: vCalc} // a number, and a key name too ("2")
	case *ast.UnaryMinusOpExpr:
		v := a.value(x.Expr, sc, fs, ctxValue)
		if v.kind == vNum {
			return val{kind: vNum, num: -v.num}
		}
		if v.stored() {
			return data
		}
		return val{kind: vCalc}
	case *ast.UnaryLenOpExpr:
		if v := a.value(x.Expr, sc, fs, ctxBind); v.kind == vKeys && v.start == 1 {
			return val{kind: vLenKeys}
		}
		return data
	case *ast.FunctionExpr:
		fv := val{kind: vFunc, fn: &fnVal{e: x, sc: sc}}
		if ctx == ctxValue {
			a.escape(fv.fn)
		}
		return fv
	case *ast.LogicalOpExpr, *ast.UnaryNotOpExpr, *ast.RelationalOpExpr:
		v, _, _ := a.expr(e, sc, fs, ctx)
		return v
	}
	return top
}

var builtinGlobals = map[string]bool{
	"tostring": true, "tonumber": true, "type": true, "select": true, "next": true, "ipairs": true,
	"pairs": true, "unpack": true, "error": true, "assert": true, "pcall": true, "xpcall": true,
	"rawequal": true, "rawlen": true, "print": true, "collectgarbage": true, "gcinfo": true,
	"loadstring": true, "load": true, "dofile": true, "loadfile": true, "setfenv": true,
	"getfenv": true, "setmetatable": true, "getmetatable": true, "rawset": true, "rawget": true,
	"require": true, "module": true, "newproxy": true,
}

var libTables = map[string]bool{
	"string": true, "table": true, "math": true, "cjson": true, "cmsgpack": true, "struct": true,
	"bit": true, "os": true, "coroutine": true, "debug": true, "package": true,
}

func (a *analyzer) global(name string, line int) val {
	switch name {
	case "KEYS":
		if !a.lib {
			return val{kind: vKeys, start: 1}
		}
		return nilV
	case "ARGV":
		if !a.lib {
			return val{kind: vArgv, start: 1}
		}
		return nilV
	case "redis", "server":
		return val{kind: vRedis}
	case "self":
		return top // a method's receiver, in a function analysed out of context
	case "_G", "_ENV":
		a.fail(line, "the script uses %s, whose effects cannot be followed", name)
	}
	if libTables[name] {
		return val{kind: vLib, name: name}
	}
	if builtinGlobals[name] {
		return val{kind: vBuiltin, name: name}
	}
	return nilV // Valkey refuses to read an undefined global: the script fails
}

// index is obj[key].
func (a *analyzer) index(obj, key val, line int) val {
	switch obj.kind {
	case vKeys:
		if n, ok := key.intConst(); ok {
			return keyRef(obj.start - 1 + n)
		}
		if key.kind == vIter && obj.start == 1 {
			return val{kind: vIterKey, s: key.s, start: key.start}
		}
		if _, ok := key.constString(); ok && key.kind == vStr {
			return nilV
		}
		// Some key of KEYS, which one not followed: a fact about it is
		// about this value only (a fresh identity).
		a.nextID++
		return val{kind: vIterKey, s: sym{kind: symIter, n: a.nextID}, start: obj.start, b: true}
	case vArgv:
		if n, ok := key.intConst(); ok {
			return argRef(obj.start - 1 + n)
		}
		return argD
	case vMulti:
		if n, ok := key.intConst(); ok {
			if obj.all {
				return val{kind: vRead, s: sym{kind: symKey, n: n}}
			}
			if n <= len(obj.elems) {
				return readOf(obj.elems[n-1], vRead)
			}
			return nilV
		}
		if key.kind == vIter && obj.all && key.start == 1 {
			return val{kind: vRead, s: key.s}
		}
		return data
	case vTable:
		return obj.tbl.get(key)
	case vRedis:
		s, ok := key.constString()
		if !ok {
			a.fail(line, "the script reaches into the redis table with a computed name, whose effects cannot be followed")
		}
		switch s {
		case "call":
			return val{kind: vRedisCall}
		case "pcall":
			return val{kind: vRedisCall, b: true}
		}
		return val{kind: vBuiltin, name: "redis." + s}
	case vLib:
		s, _ := key.constString()
		if obj.name == "debug" {
			a.fail(line, "the script uses the debug library")
		}
		return val{kind: vBuiltin, name: obj.name + "." + s}
	case vArgData:
		return argD
	case vTop, vIterKey:
		return top
	}
	return data
}

func (a *analyzer) table(x *ast.TableExpr, sc *scope, fs facts) val {
	t := &tblVal{}
	for i, f := range x.Fields {
		if f.Key == nil {
			if i == len(x.Fields)-1 && isMulti(f.Value) {
				vals, rest := a.multi(f.Value, sc, fs)
				t.pos = append(t.pos, vals...)
				if rest.kind != vNil {
					t.pos = append(t.pos, rest)
					t.dirty = true
				}
				continue
			}
			t.pos = append(t.pos, a.value(f.Value, sc, fs, ctxValue))
			continue
		}
		k := a.value(f.Key, sc, fs, ctxValue)
		v := a.value(f.Value, sc, fs, ctxValue)
		if s, ok := k.constString(); ok && k.kind == vStr {
			if t.named == nil {
				t.named = map[string]val{}
			}
			t.named[s] = v
			continue
		}
		t.pos = append(t.pos, v)
		t.dirty = true
	}
	return val{kind: vTable, tbl: t}
}
