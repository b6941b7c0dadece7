package scriptcheck

import (
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

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
