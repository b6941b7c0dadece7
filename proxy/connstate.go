package proxy

import (
	"sync/atomic"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/resp"
)

// clientState is what Valkey would hold for a client if it had a connection
// of its own (upstream.State is what a fresh upstream connection
// is told of it). The proxy keeps it for every session, shared or
// dedicated, in either client engine, and changes it in one way for each
// command that changes it: on a shared connection it is the only copy (the
// pool is chosen from proto and db, the name and library info are replayed
// if the session moves to a dedicated connection); on a dedicated one it
// follows what Valkey did (a HELLO or SELECT Valkey refused changes nothing).
type clientState struct {
	proto           int
	db              int
	name            string
	libName, libVer string
	authed          bool // may run commands (no AUTH needed, or AUTH given)
	proxyCreds      bool // authenticated with the proxy's own upstream credentials
	// login: the client's own login, which every connection opened for
	// it uses (an AUTH Valkey accepted, logins.go), and its user; "" for
	// the proxy's credentials.
	login, loginUser string
	// userOwner: the session's owner under session: user (locks.UserOwner
	// of the user it logged in as through lockproxy: loginUser, the
	// proxy's user for the proxy's credentials, "default" before any login).
	userOwner string

	// A transaction in progress on the dedicated connection: the shaper of
	// each queued command's EXEC element (nil for commands left as they are).
	inMulti    bool
	multiShape []func([]byte) []byte
	// multiDur: the transaction's durability, nil when nothing queued
	// asks for it (durable.go).
	multiDur *locks.Txn
	// multiSelect: a SELECT is queued in the transaction; execDB is the
	// database the last one that ran at EXEC switched to (-1: none), set
	// by the EXEC reply's reader (execSelect).
	multiSelect bool
	execDB      atomic.Int64

	// CLIENT NO-EVICT and NO-TOUCH, as the client set them.
	noEvict, noTouch bool

	// CLIENT REPLY: OFF, or SKIP armed for the next command. The proxy
	// applies it itself, to Valkey's replies and its own alike (upstream.Pend.Mute),
	// so it costs no dedicated connection and replies keep pairing with
	// commands; mute is the decision for the command being handled.
	replyOff, replySkip bool
	mute                bool

	// subs: the session's subscriptions, as the client sees them.
	subs clients.Subscriptions
	// monitor, replica (SYNC, PSYNC) and tracking: for CLIENT LIST's flags.
	monitor, replica, tracking bool
}

// reset is what RESET does to a connection (Valkey's clearClientConnectionState):
// RESP2, the default database, no name, logged out (back to the default
// user), no transaction, no flags; the library name and version stay. Subscriptions, MONITOR and
// tracking live on a dedicated connection, and Valkey ends them there.
func (s *session) reset() {
	s.setName("")
	s.proto, s.db = 2, s.p.opts.Upstream.DB
	s.authed, s.proxyCreds = !s.p.requireAuth, false
	s.inMulti, s.multiShape, s.multiSelect, s.multiDur = false, nil, false, nil
	s.noEvict, s.noTouch = false, false
	s.replyOff, s.replySkip, s.mute = false, false, false
	s.subs.Clear()
	s.endShardFollows() // in front of a cluster (cluster_shard_follow.go)
	s.endMonitor()
	s.tracking = false
	s.loginUser, s.login = "", ""
	s.setUserOwner(defaultUserOwner)
	s.p.ops.admin.Logout(s.id) // the LOCKPROXY AUTH admin login
}

// endMonitor: the session no longer monitors (RESET, or it ended).
func (s *session) endMonitor() {
	if s.monitor {
		s.monitor = false
		s.monitorOn.Store(false)
		s.p.own.End()
	}
}

// clientReply applies CLIENT REPLY ON|OFF|SKIP as Valkey does: ON is
// answered +OK (even after OFF or SKIP), OFF and SKIP are not answered. It
// reports false for any other argument, which Valkey refuses.
func (s *session) clientReply(mode []byte) bool {
	if !s.clientReplyState(mode) {
		return false
	}
	if resp.EqualFold(mode, "on") {
		s.local(resp.AppendSimple(nil, "OK"))
	}
	return true
}

// clientReplyState is clientReply's change of state; SKIP does nothing
// while OFF.
func (s *session) clientReplyState(mode []byte) bool {
	switch {
	case resp.EqualFold(mode, "on"):
		s.replyOff, s.replySkip, s.mute = false, false, false
	case resp.EqualFold(mode, "off"):
		s.replyOff = true
	case resp.EqualFold(mode, "skip"):
		s.replySkip = !s.replyOff
	default:
		return false
	}
	return true
}

// refusedInSubscribe reports whether Valkey will refuse the command because
// the connection is subscribed in RESP2, where only (P|S)SUBSCRIBE,
// (P|S)UNSUBSCRIBE, PING, QUIT and RESET are allowed. Such a command goes to
// Valkey as it is, so its error is the client's answer, before any of the
// proxy's (a lock refusal) and without any change of state.
func (s *session) refusedInSubscribe(k commands.Kind, args [][]byte) bool {
	if !s.subscribed() || s.proto != 2 {
		return false
	}
	switch k {
	case commands.Quit, commands.Reset:
		return false
	case commands.Stream:
		return commands.IDOf(args[0]) == commands.IDMonitor
	}
	return commands.IDOf(args[0]) != commands.IDPing
}

// subscribing applies a subscribe-family command to the session's
// subscriptions, before it is sent.
func (s *session) subscribing(args [][]byte) {
	s.trackShardChannels(args)
	k, unsub := subKind(args[0])
	s.subs.Apply(k, unsub, args[1:])
}

// subKind tells a subscribe-family command's kind of subscription, and
// whether it unsubscribes.
func subKind(name []byte) (kind clients.SubKind, unsub bool) {
	switch {
	case len(name) > 0 && (name[0] == 'p' || name[0] == 'P'):
		kind = clients.Pattern
	case len(name) > 0 && (name[0] == 's' || name[0] == 'S') && commands.IDOf(name) != commands.IDSubscribe:
		kind = clients.Shard
	}
	return kind, hasSuffixFold(name, "unsubscribe")
}

// subscribed reports whether Valkey counts a subscription of the session.
func (s *session) subscribed() bool {
	return s.subs.Any()
}

func hasSuffixFold(b []byte, suffix string) bool {
	return len(b) >= len(suffix) && resp.EqualFold(b[len(b)-len(suffix):], suffix)
}
