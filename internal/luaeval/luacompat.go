package luaeval

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// gopher-lua turns numbers into strings with Go's shortest round-trip
// formatting; Lua 5.1 uses "%.14g". The difference reaches replies through
// the '..' operator, string.format and table.concat ("lease " .. 1/3,
// or a microsecond timestamp that Lua prints as 1.7000000000000e+15), so
// luaeval routes those three through Lua 5.1's rules.

// concatName is the name compiled scripts use for the '..' operator. It is
// not a real global: the _G __index handler answers it, so pairs(_G) and
// rawget(_G, ...) do not see it.
const concatName = "__luaeval_concat"

// rewriteConcat replaces every `a .. b` in a chunk by a call
// __luaeval_concat(a, b). Operands are still evaluated left to right, as
// Lua's OP_CONCAT does.
func rewriteConcat(stmts []ast.Stmt) {
	for _, s := range stmts {
		rewriteStmt(s)
	}
}

func rewriteStmt(s ast.Stmt) {
	switch x := s.(type) {
	case *ast.AssignStmt:
		rewriteExprs(x.Lhs)
		rewriteExprs(x.Rhs)
	case *ast.LocalAssignStmt:
		rewriteExprs(x.Exprs)
	case *ast.FuncCallStmt:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.DoBlockStmt:
		rewriteConcat(x.Stmts)
	case *ast.WhileStmt:
		x.Condition = rewriteExpr(x.Condition)
		rewriteConcat(x.Stmts)
	case *ast.RepeatStmt:
		x.Condition = rewriteExpr(x.Condition)
		rewriteConcat(x.Stmts)
	case *ast.IfStmt:
		x.Condition = rewriteExpr(x.Condition)
		rewriteConcat(x.Then)
		rewriteConcat(x.Else)
	case *ast.NumberForStmt:
		x.Init = rewriteExpr(x.Init)
		x.Limit = rewriteExpr(x.Limit)
		x.Step = rewriteExpr(x.Step)
		rewriteConcat(x.Stmts)
	case *ast.GenericForStmt:
		rewriteExprs(x.Exprs)
		rewriteConcat(x.Stmts)
	case *ast.FuncDefStmt:
		rewriteExpr(x.Func)
	case *ast.ReturnStmt:
		rewriteExprs(x.Exprs)
	}
}

func rewriteExprs(es []ast.Expr) {
	for i := range es {
		es[i] = rewriteExpr(es[i])
	}
}

func rewriteExpr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case nil:
		return nil
	case *ast.StringConcatOpExpr:
		fn := &ast.IdentExpr{Value: concatName}
		fn.SetLine(x.Line())
		fn.SetLastLine(x.LastLine())
		call := &ast.FuncCallExpr{Func: fn, Args: []ast.Expr{rewriteExpr(x.Lhs), rewriteExpr(x.Rhs)}}
		call.SetLine(x.Line())
		call.SetLastLine(x.LastLine())
		return call
	case *ast.AttrGetExpr:
		x.Object = rewriteExpr(x.Object)
		x.Key = rewriteExpr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			f.Key = rewriteExpr(f.Key)
			f.Value = rewriteExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		x.Func = rewriteExpr(x.Func)
		x.Receiver = rewriteExpr(x.Receiver)
		rewriteExprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs = rewriteExpr(x.Lhs)
		x.Rhs = rewriteExpr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs = rewriteExpr(x.Lhs)
		x.Rhs = rewriteExpr(x.Rhs)
	case *ast.ArithmeticOpExpr:
		x.Lhs = rewriteExpr(x.Lhs)
		x.Rhs = rewriteExpr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = rewriteExpr(x.Expr)
	case *ast.FunctionExpr:
		rewriteConcat(x.Stmts)
	}
	return e
}

// luaCoerceString is lua_isstring + lua_tostring: strings as they are,
// numbers as "%.14g".
func luaCoerceString(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), true
	case lua.LNumber:
		return luaNumberToString(float64(x)), true
	}
	return "", false
}

// luaConcat implements a .. b: strings and numbers join, otherwise the
// __concat metamethod of a, then of b, otherwise an error.
func luaConcat(L *lua.LState) int {
	a, b := L.Get(1), L.Get(2)
	as, aok := luaCoerceString(a)
	bs, bok := luaCoerceString(b)
	if aok && bok {
		L.Push(lua.LString(as + bs))
		return 1
	}
	mm := L.GetMetaField(a, "__concat")
	if mm == lua.LNil {
		mm = L.GetMetaField(b, "__concat")
	}
	if mm != lua.LNil {
		L.Push(mm)
		L.Push(a)
		L.Push(b)
		L.Call(2, 1)
		return 1
	}
	bad := a
	if aok {
		bad = b
	}
	L.Error(lua.LString(luaWhere(L)+"attempt to concatenate a "+bad.Type().String()+" value"), 0)
	return 0
}

// luaTableConcat is Lua 5.1's table.concat.
func luaTableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := ""
	if L.Get(2) != lua.LNil {
		s, ok := luaCoerceString(L.Get(2))
		if !ok {
			L.TypeError(2, lua.LTString)
		}
		sep = s
	}
	i := L.OptInt(3, 1)
	last := L.OptInt(4, t.Len())
	var b strings.Builder
	for ; i <= last; i++ {
		s, ok := luaCoerceString(t.RawGetInt(i))
		if !ok {
			L.Error(lua.LString(luaWhere(L)+"invalid value (at index "+strconv.Itoa(i)+") in table for 'concat'"), 0)
		}
		b.WriteString(s)
		if i < last {
			b.WriteString(sep)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// luaStringFormat is Lua 5.1's string.format (lstrlib.c str_format) on
// top of Go's fmt, with C's conventions where they differ: default
// precision 6 for %g, unsigned conversions for %o %u %x %X, byte-counted
// widths for %s, "inf"/"nan" spellings, and Lua's %q quoting.
func luaStringFormat(L *lua.LState) int {
	fs, ok := luaCoerceString(L.Get(1))
	if !ok {
		L.TypeError(1, lua.LTString)
	}
	var out strings.Builder
	arg := 1
	for i := 0; i < len(fs); i++ {
		c := fs[i]
		if c != '%' {
			out.WriteByte(c)
			continue
		}
		i++
		if i < len(fs) && fs[i] == '%' {
			out.WriteByte('%')
			continue
		}
		// Flags, width (≤ 2 digits), precision (≤ 2 digits).
		start := i
		for i < len(fs) && strings.IndexByte("-+ #0", fs[i]) >= 0 {
			i++
		}
		if i-start > 5 {
			L.RaiseError("invalid format (repeated flags)")
		}
		flags := fs[start:i]
		wStart := i
		for i < len(fs) && isDigit(fs[i]) {
			i++
		}
		width := fs[wStart:i]
		prec := ""
		hasPrec := false
		if i < len(fs) && fs[i] == '.' {
			hasPrec = true
			i++
			pStart := i
			for i < len(fs) && isDigit(fs[i]) {
				i++
			}
			prec = fs[pStart:i]
		}
		if len(width) > 2 || len(prec) > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		if i >= len(fs) {
			L.RaiseError("invalid option '%%' to 'format'")
		}
		conv := fs[i]
		arg++
		spec := "%" + flags + width
		if hasPrec {
			spec += "." + prec
		}
		switch conv {
		case 'c':
			out.WriteString(fmt.Sprintf("%"+flags+width+"c", rune(byte(luaToInteger(float64(L.CheckNumber(arg)))))))
		case 'd', 'i':
			n := luaToInteger(float64(L.CheckNumber(arg)))
			out.WriteString(fmt.Sprintf(spec+"d", n))
		case 'o', 'u', 'x', 'X':
			n := uint64(luaToInteger(float64(L.CheckNumber(arg))))
			verb := string(conv)
			if conv == 'u' {
				verb = "d"
			}
			out.WriteString(fmt.Sprintf(spec+verb, n))
		case 'e', 'E', 'f', 'g', 'G':
			f := float64(L.CheckNumber(arg))
			if math.IsInf(f, 0) || math.IsNaN(f) {
				txt := luaNumberToString(f)
				if strings.ContainsRune(flags, '+') && !strings.HasPrefix(txt, "-") {
					txt = "+" + txt
				}
				if conv == 'E' || conv == 'G' {
					txt = strings.ToUpper(txt)
				}
				out.WriteString(padBytes(txt, width, strings.ContainsRune(flags, '-')))
				continue
			}
			if !hasPrec && (conv == 'g' || conv == 'G') {
				spec += ".6"
			}
			out.WriteString(fmt.Sprintf(spec+string(conv), f))
		case 'q':
			s, ok := luaCoerceString(L.Get(arg))
			if !ok {
				L.TypeError(arg, lua.LTString)
			}
			out.WriteByte('"')
			for j := 0; j < len(s); j++ {
				switch s[j] {
				case '"', '\\', '\n':
					out.WriteByte('\\')
					out.WriteByte(s[j])
				case '\r':
					out.WriteString("\\r")
				case 0:
					out.WriteString("\\000")
				default:
					out.WriteByte(s[j])
				}
			}
			out.WriteByte('"')
		case 's':
			s, ok := luaCoerceString(L.Get(arg))
			if !ok {
				if L.Get(arg) == lua.LNil && arg > L.GetTop() {
					L.ArgError(arg, "string expected, got no value")
				}
				L.TypeError(arg, lua.LTString)
			}
			if !hasPrec && len(s) >= 100 {
				out.WriteString(s) // Lua adds long strings as they are
				continue
			}
			s = cstr(s)
			if hasPrec {
				p, _ := strconv.Atoi(prec)
				if p < len(s) {
					s = s[:p]
				}
			}
			out.WriteString(padBytes(s, width, strings.ContainsRune(flags, '-')))
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", conv)
		}
	}
	L.Push(lua.LString(out.String()))
	return 1
}

// padBytes pads s with spaces to a width counted in bytes, as C does.
func padBytes(s, width string, left bool) string {
	w, _ := strconv.Atoi(width)
	if len(s) >= w {
		return s
	}
	pad := strings.Repeat(" ", w-len(s))
	if left {
		return s + pad
	}
	return pad + s
}
