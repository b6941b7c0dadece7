package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
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
	switch id := idOf(args[0]); {
	case id == cShutdown:
		return true
	case len(args) == 2 && id == cScript:
		return resp.EqualFold(args[1], "kill")
	case len(args) == 2 && id == cFunction:
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
// The one-off connection logs in as the session's shared connections do (the
// proxy's credentials, or the client's own login: logins.go), so Valkey
// checks the rights of the user the client logged in as (an AUTH sent on
// the session's own connection included: handleDedicated tracks it). A
// session in MULTI sends the command there instead, where it is queued.
func (s *session) busyCommand(cmd resp.Command) bool {
	if s.ded != nil && s.inMulti {
		return s.handleDedicated(cmd)
	}
	if s.heldFirst() {
		// On an event loop, behind the session's own script call:
		// Valkey reads nothing more from a client whose script runs.
		return true
	}
	r, ok := s.oneShot(cmd)
	if !ok {
		return true
	}
	switch {
	case r.err != nil:
		s.local(resp.AppendError(nil, s.p.dialErrorText(r.err)))
	case r.reply == nil:
		s.flush()
		return false
	default:
		if h := serverReply(cmd.Args); h != nil {
			r.reply = h(r.reply)
		}
		s.local(r.reply)
	}
	return true
}

// oneShot sends cmd on a connection of its own (sendBusy) and returns the
// answer; false when the command was put back: on an event loop the dial
// and the round trip run off the loop, and the command is handled again
// with the answer (s.learned.shot).
func (s *session) oneShot(cmd resp.Command) (oneShot, bool) {
	var r oneShot
	switch m := s.learned.shot; {
	case m != nil && string(m.raw) == string(cmd.Raw):
		r, s.learned.shot = *m, nil
	case s.lp != nil:
		// The dial and the round trip must not stall the loop's other
		// clients.
		raw := append([]byte(nil), cmd.Raw...)
		proto, login, kill := s.proto, s.login, killName(cmd.Args)
		s.offLoop(func() {
			reply, err := s.p.sendBusy(raw, kill, proto, login)
			s.learned.shot = &oneShot{raw: raw, reply: reply, err: err}
		})
		return r, false
	default:
		r.reply, r.err = s.p.sendBusy(cmd.Raw, killName(cmd.Args), s.proto, s.login)
	}
	return r, true
}

// askAside is Valkey's reply to cmd on a connection of its own logged in as
// the session (oneShot): an error of the proxy's when there was none; nil
// when the command was put back.
func (s *session) askAside(cmd resp.Command) []byte {
	r, ok := s.oneShot(cmd)
	switch {
	case !ok:
		return nil
	case r.err != nil:
		return resp.AppendError(nil, s.p.dialErrorText(r.err))
	case r.reply == nil:
		return resp.AppendError(nil, errUpstreamLost(s.p.opts.Upstream.Addr, io.EOF))
	}
	return r.reply
}

// killName is "script|kill" for SCRIPT KILL, "function|kill" for
// FUNCTION KILL, "" for any other command.
func killName(args [][]byte) string {
	switch {
	case len(args) != 2 || !resp.EqualFold(args[1], "kill"):
	case idOf(args[0]) == cScript:
		return "script|kill"
	case idOf(args[0]) == cFunction:
		return "function|kill"
	}
	return ""
}

// sendBusy sends a command for a busy Valkey (forBusyServer). In a cluster,
// SCRIPT KILL and FUNCTION KILL go to every primary, each on a connection of
// its own, at once: the busy script may run on any of them. Their replies
// are folded as the commands' tips say (request_policy:all_shards,
// response_policy:one_succeeded: +OK when one primary killed a script,
// else the first error, NOTBUSY when none runs one), read from Valkey's
// command table once loaded. SHUTDOWN and FUNCTION STATS go to the one
// upstream, as without a cluster.
func (p *Proxy) sendBusy(cmd []byte, kill string, proto int, login string) ([]byte, error) {
	if kill == "" || p.cl == nil {
		return p.sendOneShot(cmd, proto, login)
	}
	m := p.cl.Map()
	if m == nil || len(m.Primaries) == 0 {
		p.cl.Refresh()
		if m = p.cl.Map(); m == nil || len(m.Primaries) == 0 {
			return p.cl.NoMap(), nil
		}
	}
	rp := cluster.FoldOneOK // Valkey 8's and Redis 7's tips for both, until the table says
	if t := p.decider.Load().Table; t != nil {
		if c := t.LookupString(kill); c != nil {
			if r, fan := fanOutPolicy(c); fan {
				rp = r
			}
		}
	}
	replies := make([][]byte, len(m.Primaries))
	var wg sync.WaitGroup
	for i, addr := range m.Primaries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, err := p.oneShotTo(addr, cmd, proto, login)
			switch {
			case err != nil:
				reply = resp.AppendError(nil, errUpstreamLost(addr, err))
			case reply == nil:
				reply = resp.AppendError(nil, errUpstreamLost(addr, io.EOF))
			}
			replies[i] = reply
		}()
	}
	wg.Wait()
	return cluster.Fold(rp, replies), nil
}

// sendOneShot opens a connection logged in as the proxy (or as login, a
// client's own), sends cmd, and returns the reply (nil when Valkey closed
// the connection first).
func (p *Proxy) sendOneShot(cmd []byte, proto int, login string) ([]byte, error) {
	st := p.sharedState(poolKey{proto: proto, login: login})
	st.Bare = true
	nc, _, err := p.connect(st)
	if err != nil {
		return nil, err
	}
	if bytes.EqualFold(cmd, functionStatsCmd) {
		return p.shootStats(nc, cmd)
	}
	return p.shoot(nc, cmd)
}

// functionStatsCmd is FUNCTION STATS as clients send it (any letter case).
var functionStatsCmd = resp.AppendCommandStrings(nil, "FUNCTION", "STATS")

// shootStats sends FUNCTION LIST, then FUNCTION STATS, on nc, and returns
// the stats with the Lua engine's functions_count the client's: Valkey
// counts each function of a library loaded through lockproxy twice (its
// two registrations, rewrite/monitor_lib.go), and the list says which
// are the client's. While a script runs Valkey answers the list BUSY, and
// the count stays Valkey's.
func (p *Proxy) shootStats(nc net.Conn, cmd []byte) ([]byte, error) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(p.opts.Upstream.ReplyTimeout.D()))
	p.own.Add(nc, 1) // the list is kept out of MONITOR (clients.OwnLines)
	if _, err := nc.Write(append(resp.AppendCommandStrings(nil, "FUNCTION", "LIST"), cmd...)); err != nil {
		return nil, err
	}
	buf, n, err := upstream.ReadReply(nc, make([]byte, 0, 4096))
	if err != nil {
		return nil, err
	}
	list := append([]byte(nil), buf[:n]...)
	buf = append(buf[:0], buf[n:]...)
	if buf, n, err = upstream.ReadReply(nc, buf); err != nil {
		return nil, err
	}
	return rewrite.FunctionStatsCounted(buf[:n], list), nil
}

// oneShotTo is sendOneShot to one cluster node.
func (p *Proxy) oneShotTo(addr string, cmd []byte, proto int, login string) ([]byte, error) {
	st := p.sharedState(poolKey{proto: proto, login: login})
	st.Bare = true // no SCRIPT LOAD: Valkey answers it BUSY
	nc, err := p.nodeDial(addr, st)
	if err != nil {
		return nil, err
	}
	return p.shoot(nc, cmd)
}

// shoot sends cmd on nc, returns its reply and closes nc.
func (p *Proxy) shoot(nc net.Conn, cmd []byte) ([]byte, error) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(p.opts.Upstream.ReplyTimeout.D()))
	if _, err := nc.Write(cmd); err != nil {
		return nil, err
	}
	buf, n, err := upstream.ReadReply(nc, make([]byte, 0, 512))
	switch {
	case err == nil:
		return buf[:n], nil
	case errors.Is(err, io.EOF) && len(buf) == 0:
		return nil, nil
	}
	return nil, err
}
