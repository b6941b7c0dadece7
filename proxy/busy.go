package proxy

import (
	"errors"
	"io"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// Commands for a busy Valkey. While a script or function runs, Valkey reads
// every connection but answers BUSY to all commands except the few flagged
// allow_busy; of those, SCRIPT KILL, FUNCTION KILL, FUNCTION STATS and
// SHUTDOWN act on the server rather than on the connection. On a shared
// upstream connection such a command could queue behind the very script it
// is meant to end, where Valkey never reads it; so each goes on a connection
// of its own, opened for it and closed after its reply, with nothing ahead of
// it. Its reply is handed to the client in command order like any reply the
// proxy makes itself (session.local), without waiting for the earlier ones.

// forBusyServer reports whether args is one of those commands.
func forBusyServer(args [][]byte) bool {
	switch {
	case resp.EqualFold(args[0], "shutdown"):
		return true
	case len(args) == 2 && resp.EqualFold(args[0], "script"):
		return resp.EqualFold(args[1], "kill")
	case len(args) == 2 && resp.EqualFold(args[0], "function"):
		return resp.EqualFold(args[1], "kill") || resp.EqualFold(args[1], "stats")
	}
	return false
}

// oneShot is the answer to a command sent on a connection of its own.
type oneShot struct {
	raw   []byte // the command it answers
	reply []byte // nil: Valkey closed the connection without one (SHUTDOWN)
	err   error  // the connection could not be opened
}

// busyCommand sends cmd on a one-off connection and answers the client. It
// reports false when the session must end: Valkey closed the connection
// without a reply, as SHUTDOWN does, and then closes the client's too.
//
// The one-off connection logs in as the proxy does, so a session logged in as
// another user (on its dedicated connection) sends the command there instead,
// where Valkey checks that user's rights; so does a session in MULTI, where
// the command is queued.
func (s *session) busyCommand(cmd resp.Command) bool {
	if s.ded != nil && (s.inMulti || s.ownLogin) {
		return s.handleDedicated(cmd)
	}
	var r oneShot
	switch m := s.shot; {
	case m != nil && string(m.raw) == string(cmd.Raw):
		r, s.shot = *m, nil
	case s.lp != nil:
		// The dial and the round trip must not stall the loop's other
		// clients.
		raw := append([]byte(nil), cmd.Raw...)
		proto := s.proto
		s.offLoop(func() {
			reply, err := s.p.sendOneShot(raw, proto)
			s.shot = &oneShot{raw: raw, reply: reply, err: err}
		})
		return true
	default:
		r.reply, r.err = s.p.sendOneShot(cmd.Raw, s.proto)
	}
	switch {
	case r.err != nil:
		s.local(resp.AppendError(nil, s.p.dialErrorText(r.err)))
	case r.reply == nil:
		s.flush()
		return false
	default:
		s.local(r.reply)
	}
	return true
}

// sendOneShot opens a connection logged in as the proxy, sends cmd, and
// returns the reply (nil when Valkey closed the connection first).
func (p *Proxy) sendOneShot(cmd []byte, proto int) ([]byte, error) {
	st := p.sharedState(poolKey{proto: proto})
	st.bare = true
	nc, _, err := p.connect(st)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(p.opts.Upstream.ReplyTimeout.D()))
	if _, err := nc.Write(cmd); err != nil {
		return nil, err
	}
	buf, n, err := readReply(nc, make([]byte, 0, 512))
	switch {
	case err == nil:
		return buf[:n], nil
	case errors.Is(err, io.EOF) && len(buf) == 0:
		return nil, nil
	}
	return nil, err
}
