package luaeval

import (
	"crypto/sha1"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"time"
)

// Store is an in-memory keyspace (one database) that runs plain commands
// and Lua scripts the way Valkey 8.0 does, reply byte for reply byte.
//
// The zero value is ready to use and reads the wall clock. Tests that
// exercise leases freeze the clock with SetTime or Advance and move it
// forward to make a lease lapse without sleeping.
//
// A Store is safe for concurrent use; like Valkey, it runs one command or
// one whole script at a time, so a script is atomic with respect to every
// other call.
type Store struct {
	// Now is the clock. nil means time.Now. Expiry has millisecond
	// resolution, as in Valkey. It is called with the Store locked, so it
	// must not call back into the Store. Assign it before sharing the Store
	// between goroutines; SetTime and Advance are safe at any time.
	Now func() time.Time

	// ScriptTimeout bounds how long one script may run before it is
	// aborted with an error (0 means 5 s). Valkey would instead keep
	// running it and answer other clients with BUSY; in tests an infinite
	// loop is a bug to report, not a state to emulate.
	ScriptTimeout time.Duration

	mu      sync.Mutex
	db      map[string]*entry
	scripts map[string]*script // by lower-case SHA1 hex, like Valkey's script cache
}

// New returns an empty Store that reads the wall clock.
func New() *Store { return &Store{} }

// SetTime freezes the Store's clock at t.
func (s *Store) SetTime(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Now = func() time.Time { return t }
}

// Advance moves the Store's clock forward by d (backward when negative)
// and freezes it there. Keys whose expiry has passed then behave as
// missing, as after the same wall-clock wait on a real server.
func (s *Store) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.nowLocked().Add(d)
	s.Now = func() time.Time { return t }
}

func (s *Store) nowLocked() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Keys returns the names of the live (unexpired) keys, sorted. It is a Go
// helper for test assertions, not the KEYS command.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.nowLocked().UnixMilli()
	var out []string
	for k, e := range s.db {
		if !e.expiredAt(now) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// SHA1Hex returns the lower-case hex SHA1 of a script body: the name
// EVALSHA and SCRIPT LOAD use for it.
func SHA1Hex(body string) string {
	h := sha1.Sum([]byte(body))
	return hex.EncodeToString(h[:])
}

// Do runs one plain command as a RESP2 client would send it (args[0] is
// the command name, any case) and returns the exact reply bytes. EVAL,
// EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD|EXISTS|FLUSH are accepted
// too, so a test can replay a client's whole command sequence. With no
// arguments it returns nil: Valkey ignores an empty command.
func (s *Store) Do(args ...string) []byte { return s.DoProto(2, args...) }

// DoProto is Do for a client that negotiated protocol proto (2 or 3 — as
// after HELLO 3); only the encoding of the reply changes.
func (s *Store) DoProto(proto int, args ...string) []byte {
	if len(args) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.doLocked(proto, args)
	return appendReply(nil, r, proto)
}

// Eval runs EVAL script len(keys) keys... args... for a RESP2 client and
// returns the exact reply bytes Valkey 8.0 would send.
func (s *Store) Eval(script string, keys []string, args []string) []byte {
	return s.EvalProto(script, keys, args, 2)
}

// EvalProto is Eval for a client speaking protocol proto (2 or 3). The
// script itself still sees RESP2 replies unless it calls redis.setresp(3),
// exactly as in Valkey.
func (s *Store) EvalProto(script string, keys []string, args []string, proto int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.evalLocked(script, keys, args, proto, false)
	return appendReply(nil, r, proto)
}

// doLocked dispatches a client command. Client commands report arity and
// unknown-command errors in the client wording; commands called from a
// script use different wording (see scriptCall).
func (s *Store) doLocked(proto int, args []string) reply {
	name := strings.ToLower(args[0])
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		if len(args) < 3 {
			return errorReply("ERR wrong number of arguments for '" + name + "' command")
		}
		return s.evalCommand(name, args, proto)
	case "script":
		return s.scriptCommand(args)
	}
	cmd, ok := commands[name]
	if !ok {
		if realCommands[name] {
			return notImplemented(name)
		}
		return unknownCommand(args)
	}
	if !cmd.arityOK(len(args)) {
		return errorReply("ERR wrong number of arguments for '" + name + "' command")
	}
	c := &cmdCtx{s: s, now: s.nowLocked().UnixMilli(), resp: proto, name: name, args: args}
	return cmd.fn(c)
}

// unknownCommand is Valkey's processCommand wording, including its
// 128-byte budget for quoting the arguments and its CR/LF-to-space
// sanitising (the names come from the client and may contain anything).
func unknownCommand(args []string) reply {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		room := 128 - b.Len()
		if len(a) > room {
			a = a[:room]
		}
		b.WriteString("'" + a + "' ")
	}
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	msg := "ERR unknown command '" + name + "', with args beginning with: " + b.String()
	return errorReply(strings.NewReplacer("\r", " ", "\n", " ").Replace(msg))
}

// notImplemented answers a real Valkey command that luaeval does not
// model. It is deliberately not Valkey's unknown-command error: a test
// that reaches it is testing something luaeval cannot vouch for.
func notImplemented(name string) reply {
	return errorReply("ERR luaeval: command '" + name + "' is not implemented")
}
