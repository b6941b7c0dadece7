package proxy

import (
	"github.com/lockproxy/lockproxy/admin"
	"github.com/lockproxy/lockproxy/resp"
)

// admin answers the LOCKPROXY command family from the proxy itself
// (package admin answers each subcommand; adminhost.go is its seam). What
// is decided here is the session's: MULTI, when the answer waits for
// Valkey, and that it comes after every reply the client is owed.
func (s *session) admin(cmd resp.Command) {
	args := cmd.Args
	if s.ded != nil && s.inMulti {
		// Inside MULTI the proxy cannot answer in place of a queued
		// command; make Valkey abort the transaction as it does for a
		// command it cannot queue.
		s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"),
			func([]byte) []byte { return admin.InMulti() }, nil)
		return
	}
	var c *admin.Cmd
	if len(args) >= 2 {
		c = admin.Find(args[1])
	}
	if msg := admin.Refusal(c, args); msg != "" {
		s.local(resp.AppendError(nil, msg))
		return
	}
	a := s.p.ops.admin
	if msg := a.DeniedCmd(c, s.id); msg != "" {
		s.local(resp.AppendError(nil, msg))
		return
	}
	if c.Table && s.lp != nil && !s.p.tableReady() {
		s.offLoop(func() { s.p.loadTable() })
		return
	}
	// Every reply this client is owed comes first, so the answer sees the
	// effects of its earlier commands (a FENCE right after SET NX).
	if c.Valkey {
		// Reading Valkey can take seconds (every record, every primary; a
		// Valkey that does not answer): never on the event loop, whose
		// other clients would wait that long.
		sub := cmd.Clone().Args
		s.aside(func() []byte { return a.Run(c, adminConn{s}, sub[2:]) })
		return
	}
	if !s.settle() {
		return
	}
	s.local(a.Run(c, adminConn{s}, args[2:]))
}

// settle hands over queued commands and waits for their replies, so that
// an answer about them sees their effects. On an event loop, with replies
// owed, it asks for stepSettle instead (asideFirst) and reports false: the
// caller returns, and the command is handled again once they are in.
func (s *session) settle() bool {
	if s.asideFirst() {
		return false
	}
	s.flush()
	if s.ded == nil || !s.ded.Streaming() {
		s.waitDrain(0)
	}
	return true
}
