package proxy

import (
	"crypto/subtle"
	"sync/atomic"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// handle handles one command and returns the step the engine takes next
// (step.go): on to the next command, the end of the session, or, on an
// event loop, what must happen before or instead of going on. It decides
// whether the command's reply is muted (CLIENT REPLY): a command handled
// again later (offLoop, settle) keeps an armed SKIP for then.
func (s *session) handle(cmd resp.Command) step {
	k := s.p.cmds().Kind(cmd.Args[0])
	skip := s.replySkip
	s.mute, s.replySkip, s.asked = s.replyOff || skip, false, step{}
	s.beginCommand(cmd.Args)
	s.noteCommand(cmd.Args)
	inMulti := s.inMulti
	s.publishDue = !k.Forwarded() || inMulti
	s.holds = k == commands.Forward && isScriptCall(cmd.Args[0])
	s.family = k.Family()
	ok := s.route(cmd, k)
	s.holds = false
	st := s.asked
	s.asked = step{}
	if st.do == stepSettle || st.do == stepOffLoop || st.do == stepOwnConn {
		s.replySkip = s.replySkip || skip
	} else {
		s.p.ops.commands[s.family].Add(1)
		s.countCommand()
	}
	s.mute = false
	if s.publishDue || s.inMulti {
		// The state CLIENT LIST shows may have changed (after a reply
		// of the proxy's own, too: its state may change past it).
		s.publish()
	}
	s.publishDue = false
	if !ok {
		return ended(true)
	}
	return st
}

// route handles one command.
func (s *session) route(cmd resp.Command, k commands.Kind) bool {
	args := cmd.Args
	if s.needsAuth(k) {
		s.local(resp.AppendError(nil, errNoAuth))
		return true
	}
	if s.lp != nil && s.ownConnFor(k, args) {
		// Before anything is done for it: the session goes on on a
		// goroutine of its own, where it is handled again (the dial and
		// the waits of its own connection would stall the loop).
		s.asked = step{do: stepOwnConn}
		return true
	}
	if s.holds && s.sparesFirst() {
		return true // a script call: the spares beside it (busyscript.go)
	}
	if s.gated(cmd) {
		return true // a command that reconfigures Valkey (gate.go)
	}
	switch k {
	case commands.Admin:
		s.admin(cmd)
		return true
	case commands.Info:
		if s.info(cmd) {
			return true
		}
	case commands.Server:
		if forBusyServer(args) {
			return s.busyCommand(cmd)
		}
		lib, err := s.p.decider.Load().Library(args)
		if err != nil {
			s.local(resp.AppendError(nil, err.Error()))
			return true
		}
		if lib != nil {
			// FUNCTION LOAD or RESTORE: the libraries go with lockproxy's
			// monitor inside (rewrite/monitor_lib.go), on every path below.
			cmd = resp.Command{Args: lib, Raw: resp.AppendCommand(nil, lib...)}
			args = lib
		}
	}
	if s.ded != nil && s.refusedInSubscribe(k, args) {
		s.forward(cmd.Raw, nil) // Valkey's error
		return true
	}
	if s.p.cl != nil && s.clusterRoute(cmd, k) {
		return true
	}
	if (k.Forwarded() || k == commands.XRead) && s.connFirst(s.key()) {
		// Before the pause and the lock rules do anything for it: on an
		// event loop its connection is dialled off the loop, or the
		// replies owed behind a held command come in, first.
		return true
	}
	if w := s.p.pauseWait(); w > 0 && k.Forwarded() && s.p.cl == nil {
		s.holds = true // nothing behind it on its connection (busyscript.go)
		if c := s.target(); c != nil {
			c.ExpectBlock(w) // CLIENT PAUSE may hold it back (pause.go)
		}
	}
	if k == commands.Long && s.ded == nil {
		// Before the lock rules, which may send it with a hook of their
		// own (FLUSHALL under on_flush).
		if wait, ok := s.p.cmds().BlockingWait(args); ok {
			c := s.target()
			if c == nil {
				return true
			}
			c.ExpectBlock(wait)
		}
	}
	if s.lockPlan(cmd) {
		return true
	}
	if s.ded == nil && s.ownConnFor(k, args) {
		if !s.goDedicated(true) {
			return true
		}
		if hook := s.primeWait(args); hook != nil {
			// WAIT on its new connection, after the write that makes it
			// count the session's writes (wait.go).
			s.forward(cmd.Raw, hook)
			return true
		}
	}
	if s.ded != nil {
		return s.handleDedicated(cmd)
	}
	switch k {
	case commands.Server:
		hook := serverReply(args)
		if h := s.scriptExists(args); h != nil {
			hook = h
		}
		s.forward(cmd.Raw, hook)
	case commands.Forward, commands.Long:
		s.forward(cmd.Raw, nil)
	case commands.XRead:
		s.forward(cmd.Raw, nil) // without BLOCK
	case commands.Hello:
		s.hello(cmd)
	case commands.Select:
		s.selectDB(cmd)
	case commands.Client:
		return s.client(cmd)
	case commands.Auth:
		s.auth(cmd)
	case commands.Quit:
		s.redirTo.End() // before the reply: tracking.go
		s.local(resp.AppendSimple(nil, "OK"))
		return false
	case commands.Reset:
		if s.switchFirst() {
			return true
		}
		if len(args) != 1 {
			s.local(resp.AppendError(nil, errWrongArgs("reset")))
			return true
		}
		s.reset()
		s.local(resp.AppendSimple(nil, "RESET"))
	}
	return true
}

// switchFirst is asideFirst for the commands that may move the session to
// another pool (SELECT, HELLO, AUTH, RESET): on an event loop they are
// handled once every reply owed on the old pool is in, which the new
// pool's commands must not overtake. It reports whether it asked.
func (s *session) switchFirst() bool {
	return s.asideFirst()
}

// needsAuth reports whether the command must be refused with NOAUTH: the
// session has not logged in, and it is not one of the commands Valkey takes
// before that. On a dedicated connection Valkey decides.
func (s *session) needsAuth(k commands.Kind) bool {
	return s.ded == nil && !s.authed && k != commands.Auth && k != commands.Hello && k != commands.Quit && k != commands.Reset
}

// ownConnFor reports whether a command moves the session onto a dedicated
// connection: it creates state Valkey must keep for this client alone (a
// transaction, a blocked wait, subscriptions, a replication stream,
// tracking). A login as another user does not: the session shares that
// login's connections (logins.go). route asks it first on an event loop,
// to leave the loop before anything is done for the command (stepOwnConn),
// and acts on it after the lock rules on a goroutine of the session's own.
func (s *session) ownConnFor(k commands.Kind, args [][]byte) bool {
	switch k {
	case commands.Dedicated, commands.Stream, commands.Sync:
		return true
	case commands.XRead:
		return keyspec.HasBlockOption(args)
	case commands.Client:
		return len(args) >= 2 && commands.ClientKind(args[1]) != commands.Forward
	}
	return false
}

// helloAuthAt is the position of AUTH in HELLO's arguments (0: none).
func helloAuthAt(args [][]byte) int {
	for i := 2; i+2 < len(args); i++ {
		if resp.EqualFold(args[i], "auth") {
			return i
		}
	}
	return 0
}

// selectArg is SELECT's database, when Valkey will accept the number.
func selectArg(args [][]byte) (int, bool) {
	if len(args) != 2 {
		return 0, false
	}
	n, ok := valkeynum.String2ll(args[1])
	return int(n), ok && n >= 0 && n <= 1<<31-1
}

// helloVersion is HELLO's protocol version, when it is one Valkey speaks.
func helloVersion(args [][]byte) (int, bool) {
	if len(args) < 2 {
		return 0, false
	}
	v, ok := valkeynum.String2ll(args[1])
	return int(v), ok && (v == 2 || v == 3)
}

// poolAfter is the pool the session's commands use once a SELECT or HELLO
// has switched them: selectDB and hello switch to it, and on an event loop
// dial it off the loop first (connFirst).
func (s *session) poolAfter(k commands.Kind, args [][]byte) poolKey {
	key := s.key()
	switch k {
	case commands.Select:
		if db, ok := selectArg(args); ok {
			key.db = db
		}
	case commands.Hello:
		if v, ok := helloVersion(args); ok {
			key.proto = v
		}
	}
	return key
}

// handleDedicated: on its own connection a session's state lives in Valkey,
// so nearly everything is forwarded as it is.
func (s *session) handleDedicated(cmd resp.Command) bool {
	cmd = s.toValkeyIDs(cmd)
	args := cmd.Args
	switch s.p.cmds().Kind(args[0]) {
	case commands.Quit:
		s.redirTo.End() // before the reply: tracking.go
		s.local(resp.AppendSimple(nil, "OK"))
		return false
	case commands.Stream:
		if !s.ded.Streaming() {
			s.goStream(false)
		}
		s.subscribing(args)
		if !s.monitor && commands.IDOf(args[0]) == commands.IDMonitor {
			s.monitor = true
			s.monitorOn.Store(true)
			s.p.own.Begin()
		}
	case commands.Sync:
		s.replica = true
		s.publish()
		s.goStream(true)
		s.forward(cmd.Raw, nil)
		s.flush()
		return true
	case commands.Client:
		if !s.inMulti {
			s.notePause(args)
		}
		if len(args) == 3 && commands.SubOf(args) == commands.ClientReply && !s.inMulti {
			if s.ded.Streaming() {
				// Replies do not pair with commands here: Valkey
				// applies it, the proxy only to its own replies.
				s.forward(cmd.Raw, nil)
				s.clientReplyState(args[2])
				return true
			}
			if s.clientReply(args[2]) {
				return true
			}
		}
		if !s.inMulti {
			if handled, keep := s.clientSelf(args); handled {
				return keep
			}
			if len(args) == 2 && commands.SubOf(args) == commands.ClientUnpause {
				return s.busyCommand(cmd)
			}
		}
		switch {
		case len(args) >= 3 && commands.SubOf(args) == commands.ClientTracking && !s.inMulti:
			return s.clientTracking(cmd) // tracking.go
		case len(args) >= 3 && commands.SubOf(args) == commands.ClientTracking:
			s.tracking = resp.EqualFold(args[2], "on")
		case len(args) == 2 && commands.SubOf(args) == commands.ClientGetredir && s.trk != nil && !s.inMulti:
			s.clientGetredir()
			return true
		}
		if hook := s.redirHook(args); hook != nil && !s.inMulti {
			s.forward(cmd.Raw, hook)
			return true
		}
	case commands.Hello:
		// Track the protocol and name: replies are shaped for the
		// protocol, and the name may be a lock owner. Only what Valkey
		// accepted counts. The reply's id is the session's (helloHook).
		if s.inMulti {
			s.queueInMulti(cmd.Raw, nil, s.helloHook())
			return true
		}
		if len(args) == 1 && !s.ded.Streaming() {
			s.forward(cmd.Raw, s.helloHook())
			return true
		}
		if len(args) >= 2 {
			if !s.askDedicatedHook(cmd.Raw, s.helloHook()) {
				return true
			}
			s.mirror(cmd.Raw) // the session's connections on other nodes (tracking.go)
			if v, ok := helloVersion(args); ok {
				s.proto = v
			}
			for i := 2; i+1 < len(args); i++ {
				if resp.EqualFold(args[i], "setname") {
					s.setName(string(args[i+1]))
				}
			}
			if i := helloAuthAt(args); i > 0 {
				s.loggedIn(args[i+1], args[i+2])
			}
			return true
		}
	case commands.Auth:
		// Valkey decides on this connection; what it accepted is the
		// login every later connection of the session uses.
		if (len(args) == 2 || len(args) == 3) && !s.inMulti && !s.ded.Streaming() {
			if s.askDedicated(cmd.Raw) {
				s.mirror(cmd.Raw) // the session's connections on other nodes (tracking.go)
				var user []byte
				if len(args) == 3 {
					user = args[1]
				}
				s.loggedIn(user, args[len(args)-1])
			}
			return true
		}
	case commands.Select:
		if len(args) == 2 && !s.inMulti {
			if s.askDedicated(cmd.Raw) {
				s.db, _ = selectArg(args)
			}
			return true
		}
		if db, ok := selectArg(args); ok && s.inMulti {
			// Valkey switches when EXEC runs it (execSelect).
			s.multiSelect = true
			s.queueInMulti(cmd.Raw, nil, s.execSelect(db))
			return true
		}
	case commands.Reset:
		if len(args) != 1 {
			s.local(resp.AppendError(nil, errWrongArgs("reset")))
			return true
		}
		s.reset()
		s.resetTracking() // the session's connections on other nodes (tracking.go)
		if c := s.ded; c.Streaming() {
			// Valkey ends the subscriptions, MONITOR and CLIENT REPLY
			// OFF: from its +RESET on, replies pair with commands again
			// (package upstream's dispatch), and nothing is sent before it arrives.
			c.ExpectReset()
			s.forward(cmd.Raw, nil)
			s.flush()
			select {
			case <-c.Unstreamed():
			case <-c.Done():
			case <-s.p.force:
			}
			return true
		}
	}
	if wait, ok := s.p.cmds().BlockingWait(args); ok {
		s.ded.ExpectBlock(wait)
		if !s.inMulti && !s.ded.Streaming() {
			// CLIENT LIST's flag b until the reply comes.
			s.blocked.Store(true)
			s.forward(cmd.Raw, func(reply []byte) []byte {
				s.blocked.Store(false)
				return reply
			})
			return true
		}
	}
	// Transactions: remember which queued commands need their EXEC element
	// shaped (lock scripts queued in place of SET NX, DEL, ...).
	switch id := commands.IDOf(args[0]); {
	case id == commands.IDMulti:
		if !s.inMulti {
			s.inMulti, s.multiShape, s.multiDur = true, s.multiShape[:0], nil
			s.forward(cmd.Raw, nil)
			return true
		}
	case id == commands.IDExec && s.inMulti:
		shapers, selects, dur := s.multiShape, s.multiSelect, s.multiDur
		s.inMulti, s.multiShape, s.multiSelect, s.multiDur = false, nil, false, nil
		for _, f := range shapers {
			if f != nil {
				s.execDB.Store(-1)
				if dur != nil {
					s.execDurable(cmd.Raw, s.execHook(shapers), dur) // durable.go
				} else {
					s.forward(cmd.Raw, s.execHook(shapers))
				}
				if selects {
					// The database the session's commands go to
					// from here on is the one EXEC left.
					s.flush()
					s.waitDrain(0)
					if db := s.execDB.Load(); db >= 0 {
						s.db = int(db)
					}
				}
				return true
			}
		}
	case id == commands.IDDiscard:
		s.inMulti, s.multiShape, s.multiSelect, s.multiDur = false, nil, false, nil
	case s.inMulti:
		s.multiShape = append(s.multiShape, nil)
	}
	s.forward(cmd.Raw, nil)
	return true
}

// askDedicated sends raw on the dedicated connection and waits for the
// reply, reporting whether Valkey accepted the command: the session's state
// then follows what Valkey did. In stream mode, where replies do not pair
// with commands, it only sends and reports true for the caller to apply what
// the command asked.
func (s *session) askDedicated(raw []byte) bool {
	return s.askDedicatedHook(raw, nil)
}

// askDedicatedHook is askDedicated with a hook that shapes the reply (not
// in stream mode, where replies do not pair with commands).
func (s *session) askDedicatedHook(raw []byte, hook func([]byte) []byte) bool {
	if s.ded.Streaming() {
		s.forward(raw, nil)
		return true
	}
	var ok atomic.Bool
	s.forward(raw, func(reply []byte) []byte {
		ok.Store(len(reply) > 0 && reply[0] != '-')
		if hook != nil {
			reply = hook(reply)
		}
		return reply
	})
	s.flush()
	s.waitDrain(0)
	return ok.Load()
}

// hello handles HELLO [protover [AUTH user pass] [SETNAME name]] on shared
// connections. A plain protocol switch, with or without SETNAME, stays
// shared: the session moves to the shared pool of the new protocol and the
// name is kept by the proxy. HELLO with credentials other than the proxy's
// logs the session in as that user once Valkey accepts them (logIn), and
// the session moves to that login's pool.
func (s *session) hello(cmd resp.Command) {
	if s.switchFirst() {
		return
	}
	args := cmd.Args
	if len(args) == 1 {
		if !s.authed {
			s.local(resp.AppendError(nil, errHelloNoAuth))
			return
		}
		if !s.connFirst(s.key()) {
			s.forward(cmd.Raw, s.helloHook())
		}
		return
	}
	_, ok := valkeynum.String2ll(args[1])
	var user, pass, name []byte
	hasAuth, hasName := false, false
	for i := 2; ok && i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "auth") && i+2 < len(args):
			user, pass, hasAuth = args[i+1], args[i+2], true
			i += 2
		case resp.EqualFold(args[i], "setname") && i+1 < len(args):
			name, hasName = args[i+1], true
			i++
		default:
			ok = false
		}
	}
	if !ok {
		// Valkey rejects it before changing anything; let it say how.
		s.forwardReady(cmd.Raw)
		return
	}
	// Valkey's order: the version, the options as it reads them (a name
	// it would refuse), the credentials, then whether the client may run
	// HELLO at all; nothing changes before the credentials pass.
	v, vok := helloVersion(args)
	if !vok {
		s.forwardReady(cmd.Raw) // NOPROTO, from Valkey
		return
	}
	if e := clients.NameError(name); hasName && e != "" {
		s.local(resp.AppendError(nil, e))
		return
	}
	if hasAuth {
		if s.matchesProxyCreds(user, pass) {
			s.loggedIn(user, pass)
		} else {
			reply := s.logIn(cmd.Raw, user, pass, v)
			if reply == nil {
				return // handled again once Valkey answered (logIn)
			}
			if reply[0] == '-' {
				s.local(reply)
				return
			}
		}
	}
	if !s.authed {
		s.local(resp.AppendError(nil, errHelloNoAuth))
		return
	}
	key := s.poolAfter(commands.Hello, args)
	if s.connFirst(key) {
		return // handled again once the new pool is dialled
	}
	s.proto = key.proto
	if hasName {
		s.setName(string(name))
	}
	s.forward(resp.AppendCommand(nil, args[0], args[1]), s.helloHook())
}

// selectDB switches the session to the shared pool of another database. The
// SELECT itself is forwarded to a connection of that pool, so the reply (or
// the error for a database out of range) is Valkey's own.
func (s *session) selectDB(cmd resp.Command) {
	if s.switchFirst() {
		return
	}
	if s.connFirst(s.poolAfter(commands.Select, cmd.Args)) {
		return // handled again once the new pool (or, refused, its own) is dialled
	}
	if _, ok := selectArg(cmd.Args); !ok {
		s.forward(cmd.Raw, nil) // Valkey's error, and no switch
		return
	}
	if s.login != "" {
		// The new database's connections are set up as the proxy
		// (handshake): whether the user may switch is Valkey's to say.
		reply := s.askAside(cmd)
		if reply == nil {
			return // handled again with the answer (askAside)
		}
		if reply[0] == '-' {
			s.local(reply)
			return
		}
	}
	old := s.db
	s.db = s.poolAfter(commands.Select, cmd.Args).db
	if _, err := s.poolConn(s.key()); err != nil {
		s.db = old
		s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
		return
	}
	s.forward(cmd.Raw, nil)
}

// client handles CLIENT subcommands on shared connections: the ones about
// the client itself are answered by the proxy (clientSelf), CLIENT UNPAUSE
// goes on a connection of its own (writes paused by CLIENT PAUSE may be
// queued ahead of it on a shared one), per-connection ones (TRACKING,
// CACHING, ...) need a dedicated connection, the rest is forwarded. It
// reports false when the session must end.
func (s *session) client(cmd resp.Command) bool {
	cmd = s.toValkeyIDs(cmd)
	args := cmd.Args
	if s.heldFirst() {
		return true // the session's state is Valkey's to change after its held command
	}
	if isPause(args) && s.p.cl == nil {
		// Before the pause holds anything (busyscript.go).
		if s.sparesFirst() {
			return true
		}
		if s.lp == nil {
			s.p.pool(s.key()).OpenSpares()
		}
	}
	if isPause(args) && s.connFirst(s.key()) {
		return true // dialled before the pause is noted (pause.go)
	}
	s.notePause(args)
	if handled, keep := s.clientSelf(args); handled {
		return keep
	}
	switch {
	case len(args) == 3 && commands.SubOf(args) == commands.ClientReply && s.clientReply(args[2]):
		return true
	case len(args) == 2 && commands.SubOf(args) == commands.ClientUnpause:
		return s.busyCommand(cmd)
	case len(args) < 2 || commands.ClientKind(args[1]) == commands.Forward:
		s.forwardReady(cmd.Raw)
		return true
	}
	if s.goDedicated(true) {
		return s.handleDedicated(cmd)
	}
	return true
}

// auth: the proxy's own credentials keep the session on the proxy's shared
// connections; any other login is Valkey's to accept (logIn), and the
// session then shares that login's connections (logins.go).
func (s *session) auth(cmd resp.Command) {
	if s.switchFirst() {
		return
	}
	args := cmd.Args
	var user, pass []byte
	switch len(args) {
	case 2:
		pass = args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		s.forwardReady(cmd.Raw) // arity error, from Valkey
		return
	}
	if s.matchesProxyCreds(user, pass) {
		s.loggedIn(user, pass)
		s.local(resp.AppendSimple(nil, "OK"))
		return
	}
	if reply := s.logIn(cmd.Raw, user, pass, s.proto); reply != nil {
		s.local(reply) // Valkey's answer to the credentials
	}
}

func (s *session) matchesProxyCreds(user, pass []byte) bool {
	o := &s.p.opts.Upstream
	if o.Password == "" {
		return false
	}
	u := string(user)
	if u == "" {
		u = "default"
	}
	userOK := subtle.ConstantTimeCompare([]byte(u), []byte(upstream.UserOrDefault(o.Username))) == 1
	passOK := subtle.ConstantTimeCompare(pass, []byte(o.Password)) == 1
	return userOK && passOK
}

// scriptExists is the hook of SCRIPT EXISTS while lockproxy runs scripts
// under its monitor: Valkey holds a script run monitored only as the
// monitored text, under another SHA1, so a SHA1 it does not hold that
// lockproxy knows the body of (learned from EVAL or SCRIPT LOAD, forgotten
// at SCRIPT FLUSH) is answered 1, as EVALSHA of it runs through lockproxy.
func (s *session) scriptExists(args [][]byte) func([]byte) []byte {
	if len(args) < 3 || commands.SubOf(args) != commands.ScriptExists {
		return nil
	}
	c := s.p.decider.Load().Scripts
	if c == nil {
		return nil
	}
	shas := make([][]byte, len(args)-2)
	for i, a := range args[2:] {
		shas[i] = append([]byte(nil), a...)
	}
	return func(reply []byte) []byte {
		v, n, err := resp.Parse(reply)
		if err != nil || n != len(reply) || v.Type != '*' || len(v.Elems) != len(shas) {
			return reply
		}
		changed := false
		for i := range v.Elems {
			if e := &v.Elems[i]; e.Type == ':' && e.Int == 0 && c.Lookup(shas[i]) != nil {
				e.Int, changed = 1, true
			}
		}
		if !changed {
			return reply
		}
		return resp.AppendValue(nil, v)
	}
}

// serverReply is the hook of a SCRIPT, FUNCTION or SHUTDOWN reply: FUNCTION
// LIST and FUNCTION STATS show libraries loaded through lockproxy, and
// their running function, as the client sent them (rewrite.FunctionList,
// rewrite.FunctionStats); a FUNCTION LOAD or RESTORE error names a
// function by its own name (rewrite.FunctionLoadReply).
func serverReply(args [][]byte) func([]byte) []byte {
	switch commands.SubOf(args) {
	case commands.FunctionList:
		return rewrite.FunctionList
	case commands.FunctionStats:
		return rewrite.FunctionStats
	case commands.FunctionLoad, commands.FunctionRestore:
		return rewrite.FunctionLoadReply
	}
	return nil
}
