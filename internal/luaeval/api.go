package luaeval

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// setupGlobals builds the environment Valkey 8.0 gives an EVAL script:
// the Lua 5.1 base, table, string, math and coroutine libraries, os.clock,
// KEYS, ARGV, the redis table (also reachable as server), Valkey's pcall,
// and global protection (reading an undefined global or writing any new
// one is an error).
func (r *evalRun) setupGlobals(L *lua.LState, keys, argv []string) {
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	G := L.G.Global
	// gopher-lua sets math.huge to the largest finite double; Lua's is +inf.
	G.RawGetString("math").(*lua.LTable).RawSetString("huge", lua.LNumber(math.Inf(1)))
	G.RawGetString("string").(*lua.LTable).RawSetString("format", L.NewFunction(luaStringFormat))
	G.RawGetString("table").(*lua.LTable).RawSetString("concat", L.NewFunction(luaTableConcat))
	// Valkey removes file and module access; gopher-lua adds a few extras.
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require", "_printregs", "_GOPHER_LUA_VERSION"} {
		G.RawSetString(name, lua.LNil)
	}
	// Lua 5.1 semantics where gopher-lua's differ in ways scripts notice.
	G.RawSetString("tostring", L.NewFunction(luaTostring))
	G.RawSetString("tonumber", L.NewFunction(luaTonumber))
	G.RawSetString("error", L.NewFunction(luaErrorFn))
	G.RawSetString("pcall", L.NewFunction(valkeyPcall))
	G.RawSetString("collectgarbage", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	G.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	G.RawSetString("__redis__err__handler", L.NewFunction(errHandler))

	osT := L.NewTable()
	osT.RawSetString("clock", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(0)) // CPU time of the script so far: effectively nothing
		return 1
	}))
	G.RawSetString("os", osT)

	keysT := L.CreateTable(len(keys), 0)
	for i, k := range keys {
		keysT.RawSetInt(i+1, lua.LString(k))
	}
	argvT := L.CreateTable(len(argv), 0)
	for i, a := range argv {
		argvT.RawSetInt(i+1, lua.LString(a))
	}
	G.RawSetString("KEYS", keysT)
	G.RawSetString("ARGV", argvT)

	redis := r.redisTable(L)
	G.RawSetString("redis", redis)
	G.RawSetString("server", redis)

	// Protection: new fields in the library tables and in _G are refused
	// with Valkey's message; reading a missing global is refused too.
	// Overwriting an existing field is not caught (Valkey's tables are
	// truly read-only); with a fresh state per script that cannot leak.
	readonly := L.NewFunction(func(L *lua.LState) int {
		L.Error(lua.LString(luaWhere(L)+"Attempt to modify a readonly table"), 0)
		return 0
	})
	for _, name := range []string{"redis", "string", "math", "table", "os", "coroutine"} {
		mt := L.NewTable()
		mt.RawSetString("__newindex", readonly)
		L.SetMetatable(G.RawGetString(name), mt)
	}
	gmt := L.NewTable()
	gmt.RawSetString("__newindex", readonly)
	concat := L.NewFunction(luaConcat)
	gmt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		if k, ok := L.Get(2).(lua.LString); ok && k == concatName {
			L.Push(concat)
			return 1
		}
		L.Error(lua.LString(luaWhere(L)+"Script attempted to access nonexistent global variable '"+luaToString(L, L.Get(2))+"'"), 0)
		return 0
	}))
	L.SetMetatable(G, gmt)
}

// luaWhere is the position of the innermost Lua function on the stack:
// where a metamethod implemented in Go reports an error, as the errors
// Valkey raises from C for the protected tables do.
func luaWhere(L *lua.LState) string {
	for level := 1; ; level++ {
		if _, ok := L.GetStack(level); !ok {
			return ""
		}
		if w := where(L, level); w != "" {
			return w
		}
	}
}

// where is Lua's luaL_where(L, level): "source:line: " for a Lua frame,
// "" for a Go frame or a missing level.
func where(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + luaNumberToString(float64(dbg.CurrentLine)) + ": "
}

// raiseErr raises Valkey's error object: a table {err="ERR msg"} (what
// luaPushError + luaError do for errors detected in C).
func raiseErr(L *lua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

// luaErrorFn is Lua 5.1's error(): position added at the given level for
// string and number messages; any value, including nil, may be raised.
func luaErrorFn(L *lua.LState) int {
	v := L.Get(1)
	level := L.OptInt(2, 1)
	switch x := v.(type) {
	case lua.LString:
		if level > 0 {
			v = lua.LString(where(L, level) + string(x))
		}
	case lua.LNumber:
		if level > 0 {
			v = lua.LString(where(L, level) + luaNumberToString(float64(x)))
		}
	}
	L.Error(v, 0)
	return 0
}

// valkeyPcall is Valkey's replacement for pcall (script_lua.c
// luaRedisPcall): when the error is a table with an err string, pcall
// returns that string, so `local ok, e = pcall(redis.call, ...)` gets
// "ERR ..." text as in Redis 6.
func valkeyPcall(L *lua.LState) int {
	argc := L.GetTop()
	if argc == 0 {
		// Valkey's wrapper ends up calling its own placeholder boolean.
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a boolean value"))
		return 2
	}
	if err := L.PCall(argc-1, lua.MultRet, nil); err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok {
			obj = ae.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			switch e := L.GetField(t, "err").(type) {
			case lua.LString, lua.LNumber:
				obj = e
			}
		}
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaTostring is Lua 5.1's tostring: numbers as "%.14g" (gopher-lua would
// print the shortest round-trip form), __tostring honoured.
func luaTostring(L *lua.LState) int {
	v := L.CheckAny(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(luaNumberToString(float64(n))))
		return 1
	}
	L.Push(L.ToStringMeta(v))
	return 1
}

// luaTonumber is Lua 5.1's tonumber: strtod semantics ("1e3", " 5 ",
// "0x1F", "inf" all convert; gopher-lua rejects some of these), and
// strtoul for an explicit base.
func luaTonumber(L *lua.LState) int {
	base := L.OptInt(2, 10)
	if base == 10 {
		switch v := L.CheckAny(1).(type) {
		case lua.LNumber:
			L.Push(v)
			return 1
		case lua.LString:
			if f, ok := luaStr2Number(string(v)); ok {
				L.Push(lua.LNumber(f))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}
	s := L.CheckString(1)
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	s = strings.TrimLeft(cstr(s), " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	var n uint64
	i := 0
	for ; i < len(s); i++ {
		d := digitVal(s[i])
		if d < 0 || d >= base {
			break
		}
		n = n*uint64(base) + uint64(d)
	}
	if i == 0 || strings.TrimLeft(s[i:], " \t\n\v\f\r") != "" {
		L.Push(lua.LNil)
		return 1
	}
	if neg {
		n = -n // strtoul negates in unsigned arithmetic
	}
	L.Push(lua.LNumber(float64(n)))
	return 1
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}

// redisTable builds the redis (alias server) table.
func (r *evalRun) redisTable(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return r.redisCall(L, true) },
		"pcall": func(L *lua.LState) int { return r.redisCall(L, false) },
		"error_reply": func(L *lua.LState) int {
			if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
				L.Push(errorTable(L, "wrong number or type of arguments"))
				return 1
			}
			msg := cstr(L.ToString(1))
			if !strings.HasPrefix(msg, "-") {
				msg = "-" + msg
			}
			L.Push(errorTable(L, msg))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
				L.Push(errorTable(L, "wrong number or type of arguments"))
				return 1
			}
			st := L.NewTable()
			st.RawSetString("ok", L.Get(1))
			L.Push(st)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				raiseErr(L, "wrong number of arguments")
			}
			var s string
			switch v := L.Get(1).(type) {
			case lua.LString:
				s = string(v)
			case lua.LNumber:
				s = luaNumberToString(float64(v))
			}
			h := sha1.Sum([]byte(s))
			L.Push(lua.LString(hex.EncodeToString(h[:])))
			return 1
		},
		"log": func(L *lua.LState) int {
			if L.GetTop() < 2 {
				raiseErr(L, "server.log() requires two arguments or more.")
			}
			lv, ok := luaToNumber(L.Get(1))
			if !ok {
				raiseErr(L, "First argument must be a number (log level).")
			}
			if level := int(lv); level < 0 || level > 3 {
				raiseErr(L, "Invalid log level.")
			}
			return 0 // the log itself goes nowhere
		},
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				raiseErr(L, "server.setresp() requires one argument.")
			}
			n, _ := luaToNumber(L.Get(1))
			if v := int(n); v == 2 || v == 3 {
				r.resp = v
				return 0
			}
			raiseErr(L, "RESP version must be 2 or 3.")
			return 0
		},
		"set_repl": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				raiseErr(L, "server.set_repl() requires one argument.")
			}
			n, _ := luaToNumber(L.Get(1))
			if int(n)&^3 != 0 {
				raiseErr(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
			}
			return 0
		},
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
		"acl_check_cmd": func(L *lua.LState) int {
			if L.GetTop() == 0 {
				raiseErr(L, "Please specify at least one argument for this call")
			}
			name := strings.ToLower(L.ToString(1))
			if _, ok := commands[name]; !ok && !realCommands[name] {
				raiseErr(L, "Invalid command passed to server.acl_check_cmd()")
			}
			L.Push(lua.LTrue) // the default user may run everything
			return 1
		},
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]lua.LValue{
		"LOG_DEBUG": lua.LNumber(0), "LOG_VERBOSE": lua.LNumber(1),
		"LOG_NOTICE": lua.LNumber(2), "LOG_WARNING": lua.LNumber(3),
		"REPL_NONE": lua.LNumber(0), "REPL_AOF": lua.LNumber(1),
		"REPL_REPLICA": lua.LNumber(2), "REPL_SLAVE": lua.LNumber(2),
		"REPL_ALL":           lua.LNumber(3),
		"REDIS_VERSION":      lua.LString("7.2.4"),
		"REDIS_VERSION_NUM":  lua.LNumber(0x070204),
		"VALKEY_VERSION":     lua.LString("8.0.1"),
		"VALKEY_VERSION_NUM": lua.LNumber(0x080001),
		"SERVER_NAME":        lua.LString("valkey"),
	} {
		t.RawSetString(name, v)
	}
	return t
}

// luaToNumber is lua_tonumber/lua_isnumber: numbers and numeric strings.
func luaToNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return luaStr2Number(string(x))
	}
	return 0, false
}

// redisCall is redis.call (raise=true) and redis.pcall (raise=false):
// Valkey's luaRedisGenericCommand.
func (r *evalRun) redisCall(L *lua.LState, raise bool) int {
	argc := L.GetTop()
	if argc == 0 {
		return r.callError(L, raise, "Please specify at least one argument for this call")
	}
	args := make([]string, argc)
	for i := 1; i <= argc; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = string(v)
		case lua.LNumber:
			args[i-1] = luaArgString(float64(v))
		default:
			return r.callError(L, raise, "Command arguments must be strings or integers")
		}
	}
	rep := r.scriptCall(args)
	if rep.isError() {
		return r.callError(L, raise, "-"+rep.s)
	}
	L.Push(r.toLua(L, rep))
	return 1
}

func (r *evalRun) callError(L *lua.LState, raise bool, buf string) int {
	t := errorTable(L, buf)
	if raise {
		L.Error(t, 0)
	}
	L.Push(t)
	return 1
}

// scriptCall is Valkey's scriptCall: lookup, arity, "noscript", write
// permission, then the command itself at the script's protocol.
func (r *evalRun) scriptCall(args []string) reply {
	name := strings.ToLower(args[0])
	cmd, ok := commands[name]
	if !ok {
		if arity, deny := noScriptCommands[name]; deny {
			if !(command{arity: arity}).arityOK(len(args)) {
				return errorReply("ERR Wrong number of args calling command from script")
			}
			return errorReply("ERR This Redis command is not allowed from script")
		}
		if realCommands[name] {
			return notImplemented(name)
		}
		return errorReply("ERR Unknown command called from script")
	}
	if !cmd.arityOK(len(args)) {
		return errorReply("ERR Wrong number of args calling command from script")
	}
	if cmd.write && r.readOnly {
		return errorReply("ERR Write commands are not allowed from read-only scripts.")
	}
	c := &cmdCtx{s: r.s, now: r.now, resp: r.resp, name: name, args: args}
	return cmd.fn(c)
}
