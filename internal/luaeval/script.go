package luaeval

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// chunkName is the name Valkey gives every EVAL body ("@user_script";
// Lua drops the '@' in messages). gopher-lua does not strip '@', so the
// chunk is compiled as "user_script" and the '@' is added back where
// Valkey shows the raw source name (the "on @user_script:N." suffix).
const chunkName = "user_script"

// script is one compiled script body, as held in Valkey's script cache.
type script struct {
	body     string
	sha      string
	proto    *lua.FunctionProto
	noWrites bool // shebang flags=no-writes
}

// evalCommand serves EVAL, EVALSHA, EVAL_RO and EVALSHA_RO with Valkey's
// order of checks: numkeys, then the script lookup or compilation.
func (s *Store) evalCommand(name string, args []string, proto int) reply {
	numkeys, ok := valkeynum.String2ll(args[2])
	if !ok {
		return errorReply(errNotInt)
	}
	if numkeys > int64(len(args)-3) {
		return errorReply("ERR Number of keys can't be greater than number of args")
	}
	if numkeys < 0 {
		return errorReply("ERR Number of keys can't be negative")
	}
	keys := args[3 : 3+numkeys]
	argv := args[3+numkeys:]
	readOnly := strings.HasSuffix(name, "_ro")
	if strings.HasPrefix(name, "evalsha") {
		sc := s.scripts[strings.ToLower(args[1])]
		if sc == nil {
			return errorReply("NOSCRIPT No matching script.")
		}
		return s.run(sc, keys, argv, proto, readOnly)
	}
	return s.evalLocked(args[1], keys, argv, proto, readOnly)
}

// evalLocked compiles (or finds in the cache) and runs a script body.
func (s *Store) evalLocked(body string, keys, argv []string, proto int, readOnly bool) reply {
	sc, r := s.loadScript(body)
	if r != nil {
		return *r
	}
	return s.run(sc, keys, argv, proto, readOnly)
}

// loadScript returns the cached script for body, compiling and caching it
// on first use: EVAL caches, so a later EVALSHA of the same body succeeds,
// as on a real server.
func (s *Store) loadScript(body string) (*script, *reply) {
	sha := SHA1Hex(body)
	if sc := s.scripts[sha]; sc != nil {
		return sc, nil
	}
	noWrites, src, err := parseShebang(body)
	if err != "" {
		r := errorReply("ERR " + err)
		return nil, &r
	}
	p, cerr := compile(src)
	if cerr != "" {
		r := errorReply(sanitize("ERR Error compiling script (new function): " + cerr))
		return nil, &r
	}
	sc := &script{body: body, sha: sha, proto: p, noWrites: noWrites}
	if s.scripts == nil {
		s.scripts = map[string]*script{}
	}
	s.scripts[sha] = sc
	return sc, nil
}

// parseShebang is Valkey's evalExtractShebangFlags. A shebang line is
// turned into a comment ("#!" → "--") so line numbers in errors stay
// those of the original body.
func parseShebang(body string) (noWrites bool, src string, err string) {
	if !strings.HasPrefix(body, "#!") {
		return false, body, ""
	}
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return false, "", "Invalid script shebang"
	}
	parts := strings.Fields(body[:nl])
	if len(parts) == 0 {
		return false, "", "Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return false, "", "Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return false, "", "Unknown lua shebang option: " + p
		}
		for _, f := range strings.Split(v, ",") {
			switch f {
			case "no-writes":
				noWrites = true
			case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
				// Meaningless for one in-memory database.
			default:
				return false, "", "Unexpected flag in script shebang: " + f
			}
		}
	}
	return noWrites, "--" + body[2:], ""
}

// compile parses and compiles a body. The error text keeps Lua's
// "user_script:LINE: ... near 'TOKEN'" shape, but the words in the middle
// are gopher-lua's ("syntax error"), not Lua 5.1's ("'=' expected").
func compile(src string) (*lua.FunctionProto, string) {
	chunk, err := parse.Parse(strings.NewReader(src), chunkName)
	if err != nil {
		var pe *parse.Error
		if errors.As(err, &pe) {
			if pe.Pos.Line == parse.EOF {
				// Lua reports the line it reached: the last one.
				line := strings.Count(src, "\n") + 1
				return nil, chunkName + ":" + strconv.Itoa(line) + ": " + pe.Message + " near '<eof>'"
			}
			return nil, chunkName + ":" + strconv.Itoa(pe.Pos.Line) + ": " + pe.Message + " near '" + pe.Token + "'"
		}
		return nil, chunkName + ": " + strings.TrimSpace(err.Error())
	}
	rewriteConcat(chunk)
	p, err := lua.Compile(chunk, chunkName)
	if err != nil {
		var ce *lua.CompileError
		if errors.As(err, &ce) {
			return nil, chunkName + ":" + strconv.Itoa(ce.Line) + ": " + ce.Message
		}
		return nil, chunkName + ": " + err.Error()
	}
	return p, ""
}

// scriptCommand serves SCRIPT LOAD, EXISTS and FLUSH.
func (s *Store) scriptCommand(args []string) reply {
	if len(args) < 2 {
		return wrongArity("script")
	}
	sub := strings.ToLower(args[1])
	switch sub {
	case "load":
		if len(args) != 3 {
			return wrongArity("script|load")
		}
		sc, r := s.loadScript(args[2])
		if r != nil {
			return *r
		}
		return bulkReply(sc.sha)
	case "exists":
		if len(args) < 3 {
			return wrongArity("script|exists")
		}
		out := make([]reply, 0, len(args)-2)
		for _, sha := range args[2:] {
			if s.scripts[strings.ToLower(sha)] != nil {
				out = append(out, intReply(1))
			} else {
				out = append(out, intReply(0))
			}
		}
		return arrayReply(out)
	case "flush":
		if len(args) > 3 {
			return wrongArity("script|flush")
		}
		if len(args) == 3 && !strings.EqualFold(args[2], "sync") && !strings.EqualFold(args[2], "async") {
			return errorReply("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		}
		s.scripts = nil
		return okReply
	case "kill", "debug", "show", "help":
		return notImplemented("script|" + sub)
	}
	name := args[1]
	if len(name) > 128 {
		name = name[:128]
	}
	return errorReply(sanitize("ERR unknown subcommand '" + name + "'. Try SCRIPT HELP."))
}

// sanitize is what Valkey's addReplyErrorFormat does to a message: trim
// CR/LF at the ends, turn the rest into spaces.
func sanitize(msg string) string {
	msg = strings.TrimRight(msg, "\r\n")
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
}

// cstr is what C sees of a Lua string passed through lua_tostring and a
// "%s" format: everything before the first NUL.
func cstr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// evalRun is the state of one script execution.
type evalRun struct {
	s        *Store
	sc       *script
	now      int64 // unix ms, frozen for the whole script as in Valkey
	resp     int   // protocol for redis.call replies (redis.setresp)
	readOnly bool  // EVAL_RO / EVALSHA_RO or shebang no-writes
}

// run executes a compiled script in a fresh Lua state. A fresh state per
// call is equivalent to Valkey's shared one because Valkey 7+ forbids
// scripts from creating globals, so nothing can leak between calls.
func (s *Store) run(sc *script, keys, argv []string, proto int, readOnly bool) reply {
	r := &evalRun{s: s, sc: sc, now: s.nowLocked().UnixMilli(), resp: 2, readOnly: readOnly || sc.noWrites}
	L := lua.NewState(lua.Options{
		SkipOpenLibs:  true,
		CallStackSize: 20000, // Lua 5.1's LUAI_MAXCALLS; grown on demand

		MinimizeStackMemory: true,
		RegistrySize:        1024,
		RegistryMaxSize:     1 << 22,
	})
	defer L.Close()
	timeout := s.ScriptTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	L.SetContext(ctx)

	r.setupGlobals(L, keys, argv)
	fn := L.NewFunctionFromProto(sc.proto)
	handler := L.NewFunction(errHandler)
	L.Push(fn)
	err := L.PCall(0, 1, handler)
	if ctx.Err() != nil {
		return errorReply("ERR luaeval: script exceeded ScriptTimeout (" + timeout.String() + ")")
	}
	if err != nil {
		var ae *lua.ApiError
		if !errors.As(err, &ae) {
			return errorReply(sanitize("ERR luaeval: " + err.Error()))
		}
		if ae.Type == lua.ApiErrorPanic && strings.Contains(ae.Error(), "callstack overflow") {
			// Unbounded recursion. Valkey replies "ERR user_script:<line>:
			// stack overflow script: ..."; gopher-lua unwinds before the
			// line can be read, so luaeval says it in its own words.
			return errorReply("ERR luaeval: stack overflow (Lua call depth above 20000)")
		}
		if ae.Type == lua.ApiErrorPanic {
			// A Go panic the error handler could not even run for: not a
			// script error, so say so rather than use Valkey's wording.
			return errorReply(sanitize("ERR luaeval: internal error: " + ae.Error()))
		}
		return r.scriptError(L, ae.Object)
	}
	return r.fromLua(L, L.Get(-1), proto, 0)
}

// errHandler is Valkey's __server__err__handler, in Go. It runs before the
// stack unwinds, finds the Lua frame that raised the error (skipping one Go
// frame such as redis.call or error), and turns the error into a table
// {err=..., source=..., line=...}; a non-table error becomes
// {err="ERR " .. tostring(err)}.
func errHandler(L *lua.LState) int {
	v := L.Get(1)
	t, ok := v.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+luaToString(L, v)))
	}
	// Level 0 is this handler; level 1 raised the error.
	if dbg, ok := L.GetStack(1); ok {
		_, _ = L.GetInfo("Sl", dbg, lua.LNil)
		if dbg.What == "G" {
			if dbg, ok = L.GetStack(2); ok {
				_, _ = L.GetInfo("Sl", dbg, lua.LNil)
			}
		}
		if ok {
			t.RawSetString("source", lua.LString("@"+dbg.Source))
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		}
	}
	L.Push(t)
	return 1
}

// scriptError is luaCallFunction's error reply: "-<err> script: <sha>, on
// <source>:<line>." Valkey writes it without sanitising CR/LF (a script
// error containing "\r\n" really does break the reply framing), and so
// does luaeval.
func (r *evalRun) scriptError(L *lua.LState, obj lua.LValue) reply {
	t, ok := obj.(*lua.LTable)
	if !ok {
		return errorReply(cstr("ERR " + luaToString(L, obj)))
	}
	msg, hasMsg := luaStringField(L, t, "err")
	source, hasSource := luaStringField(L, t, "source")
	line, hasLine := luaStringField(L, t, "line")
	if !hasMsg {
		// Valkey 8.0.1 dereferences NULL here and crashes (fixed upstream in
		// valkey-io/valkey#2229); luaeval reports instead.
		msg = "ERR luaeval: script raised an error table without an 'err' string (Valkey 8.0.1 crashes on this)"
	}
	out := cstr(msg)
	if hasSource && hasLine {
		out += " script: " + r.sc.sha + ", on " + cstr(source) + ":" + cstr(line) + "."
	}
	return errorReply(out)
}

// luaStringField is lua_getfield + lua_isstring + lua_tostring: strings,
// and numbers formatted as Lua formats them.
func luaStringField(L *lua.LState, t *lua.LTable, k string) (string, bool) {
	switch v := L.GetField(t, k).(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return luaNumberToString(float64(v)), true
	}
	return "", false
}

// luaToString is Lua 5.1's tostring (without calling __tostring).
func luaToString(L *lua.LState, v lua.LValue) string {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return luaNumberToString(float64(x))
	case *lua.LNilType:
		return "nil"
	case lua.LBool:
		if x {
			return "true"
		}
		return "false"
	}
	return v.String()
}
