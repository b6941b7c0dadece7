package scriptcheck

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Limits that keep the analysis of any input cheap and bounded.
const (
	// MaxBody: larger scripts are not parsed; every key they receive is
	// Unknown.
	MaxBody   = 1 << 20
	maxSteps  = 200_000 // statements and calls visited, helpers inlined included
	maxDepth  = 160     // nesting of statements and expressions
	maxInline = 8       // helper calls inlined inside each other
	maxPasses = 8       // passes over one loop body
)

// Analyze reads one EVAL script.
func Analyze(body string) *Report {
	r := &Report{SHA: SHA1(body)}
	analyzeInto(r, body)
	return r
}

func analyzeInto(r *Report, body string) {
	if len(body) > MaxBody {
		r.Err = fmt.Sprintf("the script is larger than %d bytes and was not analysed", MaxBody)
		return
	}
	chunk, err := parseLua(body)
	if err != nil {
		r.Err, r.ErrLine = parseErr(err, body)
		return
	}
	a := newAnalyzer(false)
	if a.protect(r, func() {
		a.blockIn(chunk, a.globals.child(), nil)
		a.cold()
	}) {
		r.setSites(a.sites)
		r.Flushes = a.flushes
	}
}

// Library is the analysis of a FUNCTION LOAD body.
type Library struct {
	Name string
	SHA  string
	// Functions holds a report per function registered with a literal
	// name; a function registered otherwise is not known (FCALL treats it
	// as an unseen script).
	Functions map[string]*Report
	Err       string // the library could not be analysed: no function is known
	ErrLine   int
}

// IsLibrary reports whether body is a function library (it starts with a
// "#!lua name=..." line).
func IsLibrary(body string) bool { return libraryName(body) != "" }

func libraryName(body string) string {
	if !strings.HasPrefix(body, "#!") {
		return ""
	}
	line, _, _ := strings.Cut(body, "\n")
	for _, f := range strings.Fields(line)[1:] {
		if n, ok := strings.CutPrefix(f, "name="); ok {
			return n
		}
	}
	return ""
}

// AnalyzeLibrary reads a FUNCTION LOAD body, function by function.
func AnalyzeLibrary(body string) *Library {
	lib := &Library{Name: libraryName(body), SHA: SHA1(body), Functions: map[string]*Report{}}
	fail := func(msg string, line int) *Library {
		lib.Err, lib.ErrLine = msg, line
		return lib
	}
	if len(body) > MaxBody {
		return fail(fmt.Sprintf("the library is larger than %d bytes and was not analysed", MaxBody), 0)
	}
	chunk, err := parseLua(body)
	if err != nil {
		msg, line := parseErr(err, body)
		return fail(msg, line)
	}
	a := newAnalyzer(true)
	top := &Report{}
	if !a.protect(top, func() { a.blockIn(chunk, a.globals.child(), nil) }) {
		return fail(top.Err, top.ErrLine)
	}
	for _, reg := range a.regs {
		r := &Report{SHA: lib.SHA, Function: reg.name, Library: lib.Name}
		a.sites, a.flushes = nil, nil
		mark := len(a.log)
		if a.protect(r, func() { a.entry(reg.fn) }) {
			r.setSites(a.sites)
			r.Flushes = a.flushes
		}
		a.rollback(mark)
		lib.Functions[reg.name] = r
	}
	// Functions that escaped (stored in tables, passed around) may run
	// from any registered function.
	a.sites, a.flushes = nil, nil
	cold := &Report{}
	ok := a.protect(cold, a.cold)
	for _, r := range lib.Functions {
		switch {
		case r.Err != "":
		case !ok:
			r.Err, r.ErrLine = cold.Err, cold.ErrLine
		default:
			if len(a.sites) > 0 {
				r.setSites(append(append([]Site(nil), r.Sites...), a.sites...))
			}
			r.Flushes = append(r.Flushes, a.flushes...)
		}
	}
	return lib
}

func (r *Report) setSites(sites []Site) {
	seen := map[string]bool{}
	out := make([]Site, 0, len(sites))
	for _, s := range sites {
		k := fmt.Sprint(s.Line, s.Command, s.Op, s.Target.String(), s.Verdict, s.Reason)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	r.Sites = out
	r.named = false
	for _, s := range out {
		if s.Target.Named() {
			r.named = true
		}
	}
}

// parseLua parses with gopher-lua. A "#!lua ..." first line (Valkey's
// shebang for scripts and libraries) is blanked, keeping line numbers.
func parseLua(body string) (chunk []ast.Stmt, err error) {
	if strings.HasPrefix(body, "#!") {
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i:]
		} else {
			body = ""
		}
	}
	defer func() {
		if p := recover(); p != nil {
			chunk, err = nil, fmt.Errorf("cannot parse: %v", p)
		}
	}()
	chunk, err = parse.Parse(strings.NewReader(body), "script")
	if err == nil && chunk == nil {
		err = errors.New("cannot parse")
	}
	return chunk, err
}

// parseErr is the message and line of a parse error; at the end of the
// input the parser has no line, so it is the script's last.
func parseErr(err error, body string) (string, int) {
	var pe *parse.Error
	if errors.As(err, &pe) {
		msg := strings.TrimSpace(pe.Message)
		if pe.Token != "" {
			msg += fmt.Sprintf(" near %q", pe.Token)
		}
		line := pe.Pos.Line
		if line < 1 {
			line = strings.Count(strings.TrimRight(body, "\n"), "\n") + 1
		}
		return "the script does not parse: " + msg, line
	}
	return "the script does not parse: " + err.Error(), 0
}

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

// stringFn: a string function (or method) applied to args.
func stringFn(name string, args []val) val {
	switch name {
	case "len", "byte", "find":
		return data // numbers
	}
	return derived(args)
}

func (a *analyzer) builtin(name string, x *ast.FuncCallExpr, sc *scope, fs facts) ([]val, val, facts, bool) {
	line := x.Line()
	one := func(v val) ([]val, val, facts, bool) { return []val{v}, nilV, fs, false }
	switch name {
	case "error":
		a.argList(x.Args, sc, fs)
		return nil, nilV, fs, true
	case "assert":
		if len(x.Args) == 0 {
			return one(nilV)
		}
		v, t, _ := a.expr(x.Args[0], sc, fs, ctxValue)
		a.argList(x.Args[1:], sc, t)
		return []val{v}, nilV, t, false
	case "pcall", "xpcall":
		if len(x.Args) == 0 {
			return one(data)
		}
		f := a.value(x.Args[0], sc, fs, ctxCallee)
		var rest argList
		if name == "pcall" {
			rest = a.argList(x.Args[1:], sc, fs)
		} else {
			a.argList(x.Args[1:], sc, fs) // the handler escapes
			rest = argList{spread: nilV}
		}
		switch f.kind {
		case vFunc:
			v, r := a.inlineCall(f.fn, rest, fs)
			return []val{data, v}, r, fs, false
		case vRedisCall:
			return []val{data, a.redisCall(line, rest, fs)}, nilV, fs, false
		}
		taint(rest)
		return []val{data, top}, top, fs, false
	case "unpack", "table.unpack":
		al := a.argList(x.Args, sc, fs)
		return unpack(al)
	case "tostring", "tonumber":
		al := a.argList(x.Args, sc, fs)
		v := first(al.vals, al.spread)
		switch v.kind {
		case vRead, vField, vArgData, vTop:
			return one(v)
		case vStr:
			if name == "tostring" {
				return one(v)
			}
			if v.argLike() {
				return one(argD)
			}
			if v.keyish() {
				return one(top)
			}
			return one(data)
		case vIterKey:
			return one(top)
		}
		return one(data)
	case "loadstring", "load", "dofile", "loadfile", "setfenv", "getfenv", "setmetatable",
		"getmetatable", "rawset", "rawget", "require", "module", "newproxy":
		a.fail(line, "the script calls %s, whose effects cannot be followed", name)
	case "table.insert", "table.remove", "table.sort":
		al := a.argList(x.Args, sc, fs)
		a.passed(line, name, al)
		if len(al.vals) > 0 {
			switch t := al.vals[0]; t.kind {
			case vKeys, vArgv:
				a.fail(line, "the script changes its KEYS or ARGV table")
			case vTable:
				t.tbl.dirty = true
			}
		}
		taint(al)
		return one(data)
	case "table.concat":
		al := a.argList(x.Args, sc, fs)
		if len(al.vals) > 0 {
			switch t := al.vals[0]; t.kind {
			case vArgv:
				return one(argD)
			case vKeys:
				return one(top)
			case vTable:
				elems := append([]val{}, t.tbl.pos...)
				for _, v := range t.tbl.named {
					elems = append(elems, v)
				}
				if t.tbl.dirty {
					elems = append(elems, top)
				}
				return one(derived(append(elems, al.vals[1:]...)))
			}
			return one(derived(al.vals))
		}
		return one(data)
	case "redis.register_function":
		a.register(x, sc, fs)
		return one(data)
	}
	al := a.argList(x.Args, sc, fs)
	a.passed(line, name, al)
	switch {
	case name == "string.sub" && len(al.vals) > 0 && (al.vals[0].kind == vRead || al.vals[0].argLike()) && emptyRange(al.vals[1:]):
		return one(strConst("")) // string.sub(v, 1, 0): always "", no check
	case name == "string.sub" && len(al.vals) > 0 && al.vals[0].kind == vRead:
		return one(al.vals[0]) // part of the key's value, for a compare
	case name == "string.format":
		if v, ok := format(al); ok {
			return one(v) // a name the proxy can rebuild
		}
		return one(stringFn("format", al.vals))
	case strings.HasPrefix(name, "string."):
		return one(stringFn(strings.TrimPrefix(name, "string."), al.vals))
	case strings.HasPrefix(name, "cjson."), strings.HasPrefix(name, "cmsgpack."), strings.HasPrefix(name, "struct."),
		strings.HasPrefix(name, "bit."), strings.HasPrefix(name, "math."):
		return one(derived(al.vals))
	case strings.HasPrefix(name, "coroutine."):
		taint(al)
		for _, v := range al.vals {
			if v.kind == vFunc {
				a.escape(v.fn)
			}
		}
		return one(top)
	case name == "ipairs" || name == "pairs" || name == "next":
		return []val{data, top, top}, top, fs, false
	case name == "select":
		return []val{top}, top, fs, false
	}
	return one(data)
}

// format evaluates string.format with a constant format of plain %s and
// %d directives (and %%) over constants, KEYS and ARGV entries: the
// pieces of the name it builds, as .. would. Anything else is not
// evaluated.
func format(al argList) (val, bool) {
	if len(al.vals) == 0 || al.spread.kind != vNil {
		return val{}, false
	}
	f, ok := al.vals[0].constString()
	if !ok || al.vals[0].kind != vStr {
		return val{}, false
	}
	out, next := val{kind: vStr}, 1
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			out = concat(out, strConst(string(c)))
			continue
		}
		if i+1 >= len(f) {
			return val{}, false
		}
		i++
		switch f[i] {
		case '%':
			out = concat(out, strConst("%"))
		case 's', 'd':
			if next >= len(al.vals) {
				return val{}, false
			}
			v := al.vals[next]
			next++
			if _, ok := strParts(v); !ok || (f[i] == 'd' && v.kind != vNum) {
				return val{}, false
			}
			out = concat(out, v)
		default:
			return val{}, false
		}
	}
	return out, out.kind == vStr
}

// emptyRange: string.sub's (or GETRANGE's, 0-based) bounds select nothing
// whatever the string: constants i, j with 0 <= j < i, or j == 0.
func emptyRange(bounds []val) bool {
	if len(bounds) < 2 || bounds[0].kind != vNum || bounds[1].kind != vNum {
		return false
	}
	i, j := bounds[0].num, bounds[1].num
	return j == 0 || (i > 0 && j >= 0 && j < i)
}

func unpack(al argList) ([]val, val, facts, bool) {
	if len(al.vals) == 0 {
		return nil, top, nil, false
	}
	t := al.vals[0]
	var from, to int
	hasTo := false
	if len(al.vals) > 1 {
		n, ok := al.vals[1].intConst()
		if !ok {
			return nil, top, nil, false
		}
		from = n
	} else {
		from = 1
	}
	if len(al.vals) > 2 {
		n, ok := al.vals[2].intConst()
		if !ok {
			return nil, top, nil, false
		}
		to, hasTo = n, true
	}
	switch t.kind {
	case vKeys, vArgv:
		if !hasTo {
			return nil, val{kind: t.kind, start: t.start - 1 + from}, nil, false
		}
		var vals []val
		for i := from; i <= to && i-from < 64; i++ {
			vals = append(vals, spreadElem(val{kind: t.kind, start: t.start}, i-1))
		}
		return vals, nilV, nil, false
	case vTable:
		if t.tbl.dirty || hasTo || from != 1 {
			return nil, t.tbl.any(), nil, false
		}
		return append([]val(nil), t.tbl.pos...), nilV, nil, false
	case vMulti:
		return nil, data, nil, false
	case vArgData:
		return nil, argD, nil, false
	}
	return nil, top, nil, false
}

// register records redis.register_function('name', fn) and
// redis.register_function{function_name='name', callback=fn}.
func (a *analyzer) register(x *ast.FuncCallExpr, sc *scope, fs facts) {
	var nameE, cbE ast.Expr
	if len(x.Args) == 1 {
		if t, ok := x.Args[0].(*ast.TableExpr); ok {
			for _, f := range t.Fields {
				if k, ok := f.Key.(*ast.StringExpr); ok {
					switch k.Value {
					case "function_name":
						nameE = f.Value
					case "callback":
						cbE = f.Value
					}
				}
			}
		}
	} else if len(x.Args) >= 2 {
		nameE, cbE = x.Args[0], x.Args[1]
	}
	if nameE == nil || cbE == nil {
		a.argList(x.Args, sc, fs)
		return
	}
	nv := a.value(nameE, sc, fs, ctxValue)
	cv := a.value(cbE, sc, fs, ctxCallee)
	name, ok := nv.constString()
	if cv.kind != vFunc {
		return
	}
	if !ok || !a.lib {
		a.escape(cv.fn)
		return
	}
	a.regs = append(a.regs, registration{name: name, fn: cv.fn})
}
