package scriptcheck

import (
	"github.com/yuin/gopher-lua/ast"
)

// block runs stmts in a new scope. It returns the facts at its end and
// whether every path through it ended (return, error, break).
func (a *analyzer) block(stmts []ast.Stmt, parent *scope, fs facts) (facts, bool) {
	return a.blockIn(stmts, parent.child(), fs)
}

func (a *analyzer) blockIn(stmts []ast.Stmt, sc *scope, fs facts) (facts, bool) {
	for _, st := range stmts {
		var dead bool
		fs, dead = a.stmt(st, sc, fs)
		if dead {
			return fs, true
		}
	}
	return fs, false
}

const (
	ctxValue  = iota // the value may go anywhere: a function escapes
	ctxBind          // assigned to a variable: tracked
	ctxCallee        // about to be called: inlined
)

func (a *analyzer) stmt(st ast.Stmt, sc *scope, fs facts) (facts, bool) {
	line := st.Line()
	a.tick(line)
	a.enter(line)
	defer a.leave()
	switch s := st.(type) {
	case *ast.LocalAssignStmt:
		if len(s.Names) == 1 && len(s.Exprs) == 1 {
			if fe, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				// local function f: f is visible in its own body.
				b := a.declare(sc, s.Names[0], nilV)
				b.v = val{kind: vFunc, fn: &fnVal{e: fe, sc: sc}}
				return fs, false
			}
		}
		vals := a.exprList(s.Exprs, sc, fs, len(s.Names), ctxBind)
		for i, n := range s.Names {
			a.declare(sc, n, vals[i])
		}
	case *ast.AssignStmt:
		vals := a.exprList(s.Rhs, sc, fs, len(s.Lhs), ctxBind)
		for i, l := range s.Lhs {
			a.assign(l, vals[i], sc, fs)
		}
	case *ast.FuncCallStmt:
		if c, ok := s.Expr.(*ast.FuncCallExpr); ok {
			_, _, after, dead := a.call(c, sc, fs)
			return after, dead
		}
		a.value(s.Expr, sc, fs, ctxValue)
	case *ast.DoBlockStmt:
		return a.block(s.Stmts, sc, fs)
	case *ast.IfStmt:
		return a.ifStmt(s, sc, fs)
	case *ast.WhileStmt:
		a.loop(line, fs, s.Stmts, 0, false, func(fs facts) (facts, bool) {
			_, t, _ := a.expr(s.Condition, sc, fs, ctxValue)
			return a.block(s.Stmts, sc, t)
		})
	case *ast.RepeatStmt:
		a.loop(line, fs, s.Stmts, 0, false, func(fs facts) (facts, bool) {
			bsc := sc.child()
			end, dead := a.blockIn(s.Stmts, bsc, fs)
			if !dead {
				a.expr(s.Condition, bsc, end, ctxValue)
			}
			return end, dead
		})
	case *ast.NumberForStmt:
		return a.numberFor(s, sc, fs), false
	case *ast.GenericForStmt:
		return a.genericFor(s, sc, fs), false
	case *ast.FuncDefStmt:
		fv := val{kind: vFunc, fn: &fnVal{e: s.Func, sc: sc}}
		if id, ok := s.Name.Func.(*ast.IdentExpr); ok && s.Name.Receiver == nil {
			b := sc.lookup(id.Value)
			if b == nil {
				a.checkGlobalWrite(id.Value, line)
				b = a.declare(a.globals, id.Value, top)
			}
			a.set(b, fv)
			return fs, false
		}
		if s.Name.Func != nil {
			a.value(s.Name.Func, sc, fs, ctxValue)
		} else if s.Name.Receiver != nil {
			a.value(s.Name.Receiver, sc, fs, ctxValue)
		}
		a.escape(fv.fn)
	case *ast.ReturnStmt:
		vals := a.exprList(s.Exprs, sc, fs, 1, ctxValue)
		a.rets.vals = append(a.rets.vals, vals[0])
		if len(s.Exprs) > 1 || len(s.Exprs) == 1 && isMulti(s.Exprs[0]) {
			a.rets.multi = true
		}
		return fs, true
	case *ast.BreakStmt:
		return fs, true
	case *ast.GotoStmt, *ast.LabelStmt:
		a.fail(line, "the script uses goto, which Valkey's Lua 5.1 does not have")
	}
	return fs, false
}

func (a *analyzer) checkGlobalWrite(name string, line int) {
	switch name {
	case "KEYS", "ARGV", "redis", "server", "_G":
		a.fail(line, "the script assigns the global %s", name)
	}
}

func (a *analyzer) assign(l ast.Expr, v val, sc *scope, fs facts) {
	switch x := l.(type) {
	case *ast.IdentExpr:
		b := sc.lookup(x.Value)
		if b == nil {
			a.checkGlobalWrite(x.Value, x.Line())
			b = a.declare(a.globals, x.Value, top)
		}
		a.set(b, v)
		return
	case *ast.AttrGetExpr:
		obj := a.value(x.Object, sc, fs, ctxValue)
		a.value(x.Key, sc, fs, ctxValue)
		switch obj.kind {
		case vKeys, vArgv:
			a.fail(x.Line(), "the script changes its KEYS or ARGV table")
		case vTable:
			obj.tbl.dirty = true
		case vRedis, vLib:
			a.fail(x.Line(), "the script replaces a library function")
		}
	}
	if v.kind == vFunc {
		a.escape(v.fn)
	}
	if v.kind == vTable {
		v.tbl.dirty = true
	}
}

func (a *analyzer) ifStmt(s *ast.IfStmt, sc *scope, fs facts) (facts, bool) {
	_, t, f := a.expr(s.Condition, sc, fs, ctxValue)
	mark := len(a.log)
	thenFs, thenDead := a.block(s.Then, sc, t)
	thenB, thenV := a.changed(mark)
	a.rollback(mark)
	elseFs, elseDead := a.block(s.Else, sc, f)
	elseB, elseV := a.changed(mark)
	a.rollback(mark)
	switch {
	case thenDead && elseDead:
		return fs, true
	case thenDead:
		for i, b := range elseB {
			a.set(b, elseV[i])
		}
		return elseFs, false
	case elseDead:
		for i, b := range thenB {
			a.set(b, thenV[i])
		}
		return thenFs, false
	}
	// Both paths go on: a variable holds either branch's value.
	after := map[*binding]val{}
	var order []*binding
	for i, b := range thenB {
		after[b] = merge(thenV[i], b.v)
		order = append(order, b)
	}
	for i, b := range elseB {
		if tv, ok := after[b]; ok {
			// assigned on both paths: then's value against else's
			for j, tb := range thenB {
				if tb == b {
					tv = thenV[j]
				}
			}
			after[b] = merge(tv, elseV[i])
			continue
		}
		after[b] = merge(b.v, elseV[i])
		order = append(order, b)
	}
	for _, b := range order {
		a.set(b, after[b])
	}
	return thenFs.or(elseFs), false
}

// loop analyses a loop body until the variables it assigns are stable:
// a variable assigned in the body is unknown (top) at its start, as it may
// hold a value from an earlier iteration. id names the loop over KEYS (0 if
// none); full says it visits every key, so that a check with an early
// return in its body holds for every key after it.
func (a *analyzer) loop(line int, fs facts, body []ast.Stmt, id int, full bool, run func(facts) (facts, bool)) facts {
	serial := a.serial
	topped := map[*binding]bool{}
	var end facts
	var dead bool
	for pass := 0; ; pass++ {
		mark := len(a.log)
		end, dead = run(fs)
		bs, _ := a.changed(mark)
		a.rollback(mark)
		var grown []*binding
		for _, b := range bs {
			if b.serial <= serial && !topped[b] {
				topped[b] = true
				grown = append(grown, b)
			}
		}
		if len(grown) == 0 {
			break
		}
		if pass >= maxPasses {
			a.fail(line, "a loop is too complex to analyse")
		}
		for _, b := range grown {
			a.set(b, top)
		}
	}
	if full && id != 0 && !dead && !hasBreak(body) {
		return fs.and(end.lift(id))
	}
	return fs
}

func hasBreak(stmts []ast.Stmt) bool {
	for _, st := range stmts {
		switch s := st.(type) {
		case *ast.BreakStmt:
			return true
		case *ast.IfStmt:
			if hasBreak(s.Then) || hasBreak(s.Else) {
				return true
			}
		case *ast.DoBlockStmt:
			if hasBreak(s.Stmts) {
				return true
			}
		}
	}
	return false
}

func (a *analyzer) numberFor(s *ast.NumberForStmt, sc *scope, fs facts) facts {
	init := a.value(s.Init, sc, fs, ctxValue)
	limit := a.value(s.Limit, sc, fs, ctxValue)
	step := val{kind: vNum, num: 1}
	if s.Step != nil {
		step = a.value(s.Step, sc, fs, ctxValue)
	}
	iv := data
	id, full := 0, false
	if n, ok := init.intConst(); ok && limit.kind == vLenKeys && step.isNum(1) {
		a.nextID++
		id = a.nextID
		iv = val{kind: vIter, s: sym{kind: symIter, n: id}, start: n}
		full = n == 1
	}
	return a.loop(s.Line(), fs, s.Stmts, id, full, func(fs facts) (facts, bool) {
		bsc := sc.child()
		a.declare(bsc, s.Name, iv)
		return a.blockIn(s.Stmts, bsc, fs)
	})
}

func (a *analyzer) genericFor(s *ast.GenericForStmt, sc *scope, fs facts) facts {
	idx, elem := top, top
	id, full := 0, false
	var over val
	recognised := false
	if len(s.Exprs) == 1 {
		if c, ok := s.Exprs[0].(*ast.FuncCallExpr); ok && c.Receiver == nil && len(c.Args) == 1 {
			if f := a.value(c.Func, sc, fs, ctxCallee); f.kind == vBuiltin && (f.name == "ipairs" || f.name == "pairs") {
				over = a.value(c.Args[0], sc, fs, ctxValue)
				recognised = true
			}
		}
	}
	if recognised {
		a.nextID++
		it := sym{kind: symIter, n: a.nextID}
		switch over.kind {
		case vKeys:
			id, full = a.nextID, over.start == 1
			idx = val{kind: vIter, s: it, start: over.start}
			elem = val{kind: vIterKey, s: it, start: over.start}
		case vMulti:
			idx, elem = data, data
			if over.all {
				id, full = a.nextID, true
				idx = val{kind: vIter, s: it, start: 1}
				elem = val{kind: vRead, s: it}
			}
		case vArgv:
			idx, elem = data, argD
		case vTable:
			idx, elem = data, over.tbl.any()
		case vArgData:
			idx, elem = data, argD
		case vData, vNil:
			idx, elem = data, data
		}
	} else {
		a.argList(s.Exprs, sc, fs)
	}
	return a.loop(s.Line(), fs, s.Stmts, id, full, func(fs facts) (facts, bool) {
		bsc := sc.child()
		for i, n := range s.Names {
			v := top
			switch i {
			case 0:
				v = idx
			case 1:
				v = elem
			}
			a.declare(bsc, n, v)
		}
		return a.blockIn(s.Stmts, bsc, fs)
	})
}
