package scriptcheck

import (
	"fmt"

	"github.com/yuin/gopher-lua/ast"
)

// stop ends the analysis of a script: every key it receives is Unknown.
type stop struct {
	why  string
	line int
}

type binding struct {
	v      val
	serial int
}

type scope struct {
	vars   map[string]*binding
	parent *scope
}

func (s *scope) child() *scope { return &scope{parent: s} }

func (s *scope) lookup(name string) *binding {
	for ; s != nil; s = s.parent {
		if b, ok := s.vars[name]; ok {
			return b
		}
	}
	return nil
}

type logEntry struct {
	b   *binding
	old val
}

type registration struct {
	name string
	fn   *fnVal
}

type returns struct {
	vals  []val
	multi bool
}

type analyzer struct {
	lib     bool
	globals *scope
	sites   []Site
	flushes []Site     // FLUSHALL, FLUSHDB, SWAPDB calls
	log     []logEntry // assignments, to undo one branch before analysing the other
	steps   int
	depth   int
	serial  int
	nextID  int
	inline  []*ast.FunctionExpr
	inFunc  int
	rets    *returns
	escaped []*fnVal
	escSet  map[*ast.FunctionExpr]bool
	regs    []registration
}

func newAnalyzer(lib bool) *analyzer {
	return &analyzer{lib: lib, globals: &scope{}, escSet: map[*ast.FunctionExpr]bool{}, rets: &returns{}}
}

// protect runs f, turning a stop (or a bug) into r.Err.
func (a *analyzer) protect(r *Report, f func()) (ok bool) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		ok = false
		if s, isStop := p.(stop); isStop {
			r.Err, r.ErrLine = s.why, s.line
			return
		}
		r.Err = fmt.Sprintf("internal error in the analysis: %v", p)
	}()
	f()
	return true
}

func (a *analyzer) fail(line int, format string, args ...any) {
	panic(stop{why: fmt.Sprintf(format, args...), line: line})
}

func (a *analyzer) tick(line int) {
	a.steps++
	if a.steps > maxSteps {
		a.fail(line, "the script is too complex to analyse")
	}
}

func (a *analyzer) enter(line int) {
	a.depth++
	if a.depth > maxDepth {
		a.fail(line, "the script nests too deeply to analyse")
	}
}

func (a *analyzer) leave() { a.depth-- }

func (a *analyzer) declare(sc *scope, name string, v val) *binding {
	if sc.vars == nil {
		sc.vars = map[string]*binding{}
	}
	a.serial++
	b := &binding{v: v, serial: a.serial}
	sc.vars[name] = b
	return b
}

func (a *analyzer) set(b *binding, v val) {
	a.log = append(a.log, logEntry{b: b, old: b.v})
	b.v = v
}

func (a *analyzer) rollback(mark int) {
	for i := len(a.log) - 1; i >= mark; i-- {
		a.log[i].b.v = a.log[i].old
	}
	a.log = a.log[:mark]
}

// changed lists the bindings assigned since mark, in first-assignment
// order, with their current values.
func (a *analyzer) changed(mark int) ([]*binding, []val) {
	var bs []*binding
	var vs []val
	seen := map[*binding]bool{}
	for _, e := range a.log[mark:] {
		if !seen[e.b] {
			seen[e.b] = true
			bs = append(bs, e.b)
		}
	}
	for _, b := range bs {
		vs = append(vs, b.v)
	}
	return bs, vs
}

func (a *analyzer) escape(fn *fnVal) {
	if fn == nil || a.escSet[fn.e] {
		return
	}
	a.escSet[fn.e] = true
	a.escaped = append(a.escaped, fn)
}

// cold analyses the functions that escaped, as if called from anywhere:
// parameters and upvalues unknown, no facts.
func (a *analyzer) cold() {
	for i := 0; i < len(a.escaped); i++ {
		fn := a.escaped[i]
		sc := a.globals.child()
		sc.vars = map[string]*binding{}
		for s := fn.sc; s != nil && s != a.globals; s = s.parent {
			for name, b := range s.vars {
				if _, ok := sc.vars[name]; ok {
					continue
				}
				v := top
				switch b.v.kind {
				case vFunc, vRedis, vRedisCall, vBuiltin, vLib, vKeys, vArgv:
					v = b.v
				}
				sc.vars[name] = &binding{v: v}
			}
		}
		for _, p := range fn.e.ParList.Names {
			a.declare(sc, p, top)
		}
		mark := len(a.log)
		saved := a.rets
		a.rets = &returns{}
		a.inFunc++
		a.inline = append(a.inline, fn.e)
		a.blockIn(fn.e.Stmts, sc, nil)
		a.inline = a.inline[:len(a.inline)-1]
		a.inFunc--
		a.rets = saved
		a.rollback(mark)
	}
}

// entry analyses a library function: keys and args are its parameters.
func (a *analyzer) entry(fn *fnVal) {
	sc := fn.sc.child()
	for i, p := range fn.e.ParList.Names {
		v := nilV
		switch i {
		case 0:
			v = val{kind: vKeys, start: 1}
		case 1:
			v = val{kind: vArgv, start: 1}
		}
		a.declare(sc, p, v)
	}
	a.inFunc++
	a.inline = append(a.inline, fn.e)
	saved := a.rets
	a.rets = &returns{}
	a.blockIn(fn.e.Stmts, sc, nil)
	a.rets = saved
	a.inline = a.inline[:len(a.inline)-1]
	a.inFunc--
}
