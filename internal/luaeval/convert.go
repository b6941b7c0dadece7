package luaeval

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// maxReplyDepth stops the conversion of self-referencing or absurdly deep
// tables. Valkey stops when the C Lua stack cannot grow (lua_checkstack)
// and emits "reached lua stack limit" in place of the element; luaeval
// does the same at a fixed depth, which is not the depth Valkey would
// reach.
const maxReplyDepth = 1000

// toLua converts a command reply into the Lua value redis.call returns,
// following Valkey's redisProtocolToLuaType for the script's protocol
// (RESP2 unless the script called redis.setresp(3)).
func (r *evalRun) toLua(L *lua.LState, rep reply) lua.LValue {
	switch rep.k {
	case kStatus:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(rep.s))
		return t
	case kError:
		return errorTable(L, "-"+rep.s)
	case kInt:
		return lua.LNumber(rep.n)
	case kBulk:
		return lua.LString(rep.s)
	case kNull, kNullArray:
		if r.resp >= 3 {
			return lua.LNil
		}
		return lua.LFalse
	case kArray:
		return r.arrayToLua(L, rep.elems)
	case kMap:
		if r.resp < 3 {
			return r.arrayToLua(L, rep.elems)
		}
		m := L.NewTable()
		for i := 0; i+1 < len(rep.elems); i += 2 {
			m.RawSet(r.toLua(L, rep.elems[i]), r.toLua(L, rep.elems[i+1]))
		}
		t := L.NewTable()
		t.RawSetString("map", m)
		return t
	case kSet:
		if r.resp < 3 {
			return r.arrayToLua(L, rep.elems)
		}
		m := L.NewTable()
		for _, e := range rep.elems {
			m.RawSet(r.toLua(L, e), lua.LTrue)
		}
		t := L.NewTable()
		t.RawSetString("set", m)
		return t
	case kDouble:
		if r.resp < 3 {
			return lua.LString(d2string(rep.f))
		}
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(rep.f))
		return t
	case kBool:
		if r.resp < 3 {
			if rep.b {
				return lua.LNumber(1)
			}
			return lua.LNumber(0)
		}
		return lua.LBool(rep.b)
	case kBigNum:
		if r.resp < 3 {
			return lua.LString(rep.s)
		}
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(rep.s))
		return t
	case kVerbatim:
		if r.resp < 3 {
			return lua.LString(rep.s)
		}
		v := L.NewTable()
		v.RawSetString("format", lua.LString(rep.vfmt))
		v.RawSetString("string", lua.LString(rep.s))
		t := L.NewTable()
		t.RawSetString("verbatim_string", v)
		return t
	}
	return lua.LNil
}

func (r *evalRun) arrayToLua(L *lua.LState, elems []reply) *lua.LTable {
	t := L.CreateTable(len(elems), 0)
	for i, e := range elems {
		t.RawSetInt(i+1, r.toLua(L, e))
	}
	return t
}

// errorTable is Valkey's luaPushErrorBuff: a table {err="CODE msg"}. A
// buffer starting with '-' carries its own code (the first word); without
// one, or without a space, the code is ERR. CR/LF at either end of the
// message are trimmed.
func errorTable(L *lua.LState, buf string) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(luaErrorText(buf)))
	return t
}

func luaErrorText(buf string) string {
	code, msg := "ERR", buf
	if strings.HasPrefix(buf, "-") {
		if sp := strings.IndexByte(buf, ' '); sp < 0 {
			msg = buf[1:]
		} else {
			code, msg = buf[1:sp], buf[sp+1:]
		}
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

// fromLua converts a script's return value into a reply for a client
// speaking proto, following Valkey's luaReplyToRedisReply. Booleans follow
// the script's protocol (redis.setresp), nil always becomes a null.
func (r *evalRun) fromLua(L *lua.LState, v lua.LValue, proto, depth int) reply {
	if depth > maxReplyDepth {
		return errorReply("ERR reached lua stack limit")
	}
	switch x := v.(type) {
	case lua.LString:
		return bulkReply(string(x))
	case lua.LBool:
		if r.resp >= 3 {
			return reply{k: kBool, b: bool(x)}
		}
		if x {
			return intReply(1)
		}
		return nullReply()
	case lua.LNumber:
		return intReply(luaToInteger(float64(x)))
	case *lua.LTable:
		return r.tableFromLua(L, x, proto, depth)
	}
	return nullReply()
}

// tableFromLua checks the special fields in Valkey's order: err, ok,
// double, big_number, verbatim_string, map, set; anything else is an array
// read from index 1 up to the first nil.
func (r *evalRun) tableFromLua(L *lua.LState, t *lua.LTable, proto, depth int) reply {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		// addReplyErrorFormat("-%s"): C-string cut, ends trimmed, CR/LF → space.
		msg := sanitize("-" + cstr(string(s)))
		return errorReply(msg[1:])
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return statusReply(strings.NewReplacer("\r", " ", "\n", " ").Replace(cstr(string(s))))
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		return doubleReply(float64(n))
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		return reply{k: kBigNum, s: strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s))}
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, fok := vt.RawGetString("format").(lua.LString)
		s, sok := vt.RawGetString("string").(lua.LString)
		if fok && sok {
			vf := cstr(string(f))
			if len(vf) > 3 {
				vf = vf[:3]
			}
			return reply{k: kVerbatim, s: string(s), vfmt: vf}
		}
	}
	if mt, ok := t.RawGetString("map").(*lua.LTable); ok {
		out := reply{k: kMap}
		// Valkey walks the table with lua_next, in C Lua's hash order;
		// luaeval walks it in insertion order (gopher-lua's Next), which is
		// deterministic but can differ from Valkey's for two or more keys.
		for k, v := mt.Next(lua.LNil); k != lua.LNil; k, v = mt.Next(k) {
			out.elems = append(out.elems, r.fromLua(L, k, proto, depth+1), r.fromLua(L, v, proto, depth+1))
		}
		return out
	}
	if st, ok := t.RawGetString("set").(*lua.LTable); ok {
		out := reply{k: kSet}
		for k, _ := st.Next(lua.LNil); k != lua.LNil; k, _ = st.Next(k) {
			out.elems = append(out.elems, r.fromLua(L, k, proto, depth+1))
		}
		return out
	}
	out := reply{k: kArray, elems: []reply{}}
	for i := 1; ; i++ {
		e := t.RawGetInt(i)
		if e == lua.LNil {
			break
		}
		out.elems = append(out.elems, r.fromLua(L, e, proto, depth+1))
	}
	return out
}
