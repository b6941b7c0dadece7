package scriptcheck

import (
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

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
