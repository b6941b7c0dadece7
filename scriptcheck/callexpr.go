package scriptcheck

import (
	"github.com/yuin/gopher-lua/ast"
)

// call analyses a call. It returns the values it yields (and the rest as
// one value), the facts after it, and whether it never returns (error).
func (a *analyzer) call(x *ast.FuncCallExpr, sc *scope, fs facts) ([]val, val, facts, bool) {
	line := x.Line()
	a.tick(line)
	a.enter(line)
	defer a.leave()
	if x.Receiver != nil {
		recv := a.value(x.Receiver, sc, fs, ctxValue)
		al := a.argList(x.Args, sc, fs)
		a.passed(line, x.Method, al)
		return []val{stringFn(x.Method, append([]val{recv}, al.vals...))}, nilV, fs, false
	}
	fn := a.value(x.Func, sc, fs, ctxCallee)
	switch fn.kind {
	case vRedisCall:
		al := a.argList(x.Args, sc, fs)
		return []val{a.redisCall(line, al, fs)}, nilV, fs, false
	case vBuiltin:
		return a.builtin(fn.name, x, sc, fs)
	case vFunc:
		al := a.argList(x.Args, sc, fs)
		v, rest := a.inlineCall(fn.fn, al, fs)
		return []val{v}, rest, fs, false
	}
	al := a.argList(x.Args, sc, fs)
	taint(al)
	if fn.kind == vTop {
		// A function value the analysis lost track of (from select, a
		// table it cannot follow, a parameter): it may be redis.call.
		a.anywhere(line, "it calls a function value the analysis cannot follow, which may be redis.call")
	}
	return []val{top}, top, fs, false
}

// anywhere records a call that may change any key at all, received or
// not: the proxy judges it against every rule.
func (a *analyzer) anywhere(line int, why string) {
	a.sites = append(a.sites, Site{Line: line, Op: OpOther, Target: Target{Kind: TargetAny}, Verdict: Unknown,
		Reason: "cannot tell which key the script changes: " + why})
}

// passed: redis.call handed to a library function (string.gsub's
// replacement, table.sort's comparator) is called with arguments the
// analysis does not see.
func (a *analyzer) passed(line int, fn string, al argList) {
	for _, v := range append(al.vals, al.spread) {
		if v.kind == vRedisCall || v.kind == vRedis {
			a.anywhere(line, "it passes redis.call to "+fn)
			return
		}
	}
}

// taint: tables passed where the analysis cannot follow may be changed.
func taint(al argList) {
	for _, v := range append(al.vals, al.spread) {
		if v.kind == vTable {
			v.tbl.dirty = true
		}
	}
}

// inlineCall analyses a call of a function of the script with its
// arguments, in the caller's facts.
func (a *analyzer) inlineCall(fn *fnVal, al argList, fs facts) (val, val) {
	for _, f := range a.inline {
		if f == fn.e {
			a.escape(fn) // recursion: analysed once more with unknown arguments
			return top, top
		}
	}
	if len(a.inline) >= maxInline {
		a.escape(fn)
		return top, top
	}
	sc := fn.sc.child()
	for i, p := range fn.e.ParList.Names {
		v := nilV
		if i < len(al.vals) {
			v = al.vals[i]
		} else if al.spread.kind != vNil {
			v = spreadElem(al.spread, i-len(al.vals))
		}
		a.declare(sc, p, v)
	}
	saved := a.rets
	a.rets = &returns{}
	a.inline = append(a.inline, fn.e)
	a.inFunc++
	_, dead := a.block(fn.e.Stmts, sc, fs)
	a.inFunc--
	a.inline = a.inline[:len(a.inline)-1]
	rets := a.rets
	a.rets = saved
	if !dead {
		rets.vals = append(rets.vals, nilV)
	}
	v := rets.vals[0]
	for _, r := range rets.vals[1:] {
		v = merge(v, r)
	}
	rest := nilV
	if rets.multi {
		rest = top
	}
	return v, rest
}
