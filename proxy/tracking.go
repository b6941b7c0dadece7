package proxy

import (
	"maps"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// Client-side caching (CLIENT TRACKING) through the proxy.
//
// Tracking is state of one connection: Valkey remembers the keys a
// connection read and tells that connection (or the one it redirects to)
// when they change. So a session that turns tracking on moves onto a
// connection of its own (as before). In front of a cluster one connection
// reaches one node, so the session gets one of its own on every node its
// keys take it to, each told CLIENT TRACKING with the client's options as
// it is opened: every slot is tracked, and the invalidations of every node
// reach the client, each after the replies that came before it on its
// connection (session.PushAfter). Commands go to the connection of their
// slot's node; keyless ones stay where the session's last command went.
//
// REDIRECT names a client of the proxy (its CLIENT ID). Valkey knows only
// its own connections, so the proxy opens, per node, a connection of its
// own for the target (RESP3: Valkey then pushes `invalidate` to it whatever
// the target speaks), tracks REDIRECT to that one, and hands each push to
// the target as Valkey would have sent it there: the same push under RESP3,
// a `message` of `__redis__:invalidate` under RESP2 while the target is
// subscribed, nothing otherwise. A relay closes when its target quits
// (clients.Target), so Valkey finds the redirect broken and says so
// (tracking-redir-broken), as it does directly. The state is a
// clients.Tracking; opening its connections and relays is the session's.

// spreads reports whether the session's own connections may be on several
// nodes: in front of a cluster, once it tracked.
func (s *session) spreads() bool { return s.p.cl != nil && s.trk != nil }

// clientTracking handles CLIENT TRACKING on the session's own connection
// (outside a transaction). It reports false when the session must end.
func (s *session) clientTracking(cmd resp.Command) bool {
	args := cmd.Args
	on := resp.EqualFold(args[2], "on")
	if !on && !resp.EqualFold(args[2], "off") || s.ded.Streaming() {
		s.forward(cmd.Raw, nil) // Valkey's error, or a subscriber's
		return true
	}
	var target *session
	redirectAt, valkeyErr, errText := clients.TrackingRedirect(args, func(id int64) bool {
		target = s.p.sessionByID(uint64(id))
		return target != nil
	})
	switch {
	case valkeyErr:
		s.forward(cmd.Raw, nil) // Valkey's error
		return true
	case errText != "":
		s.local(resp.AppendError(nil, errText))
		return true
	}
	kept := cmd.Clone().Args
	t := &clients.Tracking{On: on, Args: kept, RedirectAt: redirectAt}
	if target != nil {
		t.Target = &target.redirTo
	}
	old := s.trk
	if old != nil {
		t.Own, t.Held, t.MultiHeld = old.Own, old.Held, old.MultiHeld
		if old.Target == t.Target {
			t.Relays = old.Relays
		}
	}
	if t.Own == nil && s.p.cl != nil {
		t.Own = map[string]*upstream.Conn{s.ded.Addr(): s.ded}
	}
	st, err := s.trackingCommand(t, s.ded.Addr())
	if err != nil {
		s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
		return true
	}
	fresh := map[*upstream.Conn]bool{}
	if on && s.p.cl != nil && t.Has("bcast") {
		had := maps.Clone(t.Own)
		if !s.bcastEverywhere(t) {
			return true
		}
		for addr, c := range t.Own {
			if had[addr] != c {
				fresh[c] = true
			}
		}
	}
	if !s.askDedicated(resp.AppendCommandStrings(nil, st...)) {
		// Valkey refused it: nothing changed. Its reply was the client's.
		if old == nil || old.Target != t.Target {
			t.CloseRelays()
		}
		return true
	}
	if old != nil && old.Target != t.Target {
		old.CloseRelays()
	}
	s.trk = t
	s.tracking = on
	// The session's connections on the other nodes track the same way
	// (those just opened for BCAST do already).
	cur := s.ded
	for addr, c := range t.Own {
		if c == cur || c.Dead() || fresh[c] {
			continue
		}
		st, err := s.trackingCommand(t, addr)
		if err != nil {
			c.Fail(err) // cannot track there as asked: the session ends, told why
			continue
		}
		s.sendMuted(c, resp.AppendCommandStrings(nil, st...))
	}
	s.setDed(cur)
	return true
}

// trackingCommand is CLIENT TRACKING as the session's connection on node
// must get it: REDIRECT's id is that of the node's relay, opened on first
// use.
func (s *session) trackingCommand(t *clients.Tracking, node string) ([]string, error) {
	var id int64
	if t.RedirectAt > 0 {
		r, err := s.relayOn(t, node)
		if err != nil {
			return nil, err
		}
		id = r.ID
	}
	return clients.TrackingCommand(t.Args, t.RedirectAt, id), nil
}

// relayOn returns the node's relay for the session's REDIRECT target,
// opening it first: a RESP3 connection logged in as the session's are
// (only its CLIENT ID is asked), whose pushes go to the target.
func (s *session) relayOn(t *clients.Tracking, node string) (*clients.Relay, error) {
	if r := t.RelayOn(node, s.login); r != nil {
		return r, nil
	}
	st := s.p.sharedState(poolKey{proto: 3, db: 0, node: node, login: s.login})
	st.Bare = true
	nc, addr, err := s.p.connect(st)
	if err != nil {
		return nil, err
	}
	id, err := clients.AskID(nc, max(s.p.opts.Upstream.DialTimeout.D(), s.p.opts.Upstream.ReplyTimeout.D()))
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := s.p.startUp(nc, addr, nil, t.Target.Deliver)
	r := &clients.Relay{C: c, ID: id, Node: node, Login: s.login}
	t.AddRelay(r)
	// TRACKINGINFO, GETREDIR and a broken redirect's push name the relay
	// by Valkey's id: p.vids turns it into the target's.
	s.p.vids.Add(id, t.Target.ID)
	return r, nil
}

// invalidated hands the session an invalidation that a relay received as
// Valkey would have sent it here (clients.Invalidation).
func (s *session) invalidated(push []byte) {
	sn := s.snap.Load()
	if sn == nil {
		return
	}
	if b := clients.Invalidation(push, sn.Proto, sn.Sub+sn.PSub+sn.SSub > 0); b != nil {
		s.write(b)
	}
}

// clientGetredir answers CLIENT GETREDIR with the proxy's id of the
// REDIRECT target (Valkey knows only the relay's): -1 with tracking off,
// 0 without REDIRECT.
func (s *session) clientGetredir() {
	t := s.trk
	switch {
	case !t.On:
		s.local(resp.AppendInt(nil, -1))
	case t.Target == nil:
		s.local(resp.AppendInt(nil, 0))
	default:
		s.local(resp.AppendInt(nil, int64(t.Target.ID)))
	}
}

// spreadTo makes the session's own connection on addr the current one,
// opening it (tracking as the session does) on first use. It reports
// false, having answered the client, when that fails.
func (s *session) spreadTo(addr string) bool {
	c, err := s.ownOn(s.trk, addr)
	if err != nil {
		s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
		return false
	}
	s.setDed(c)
	return true
}

// ownOn returns the session's own connection on addr, opening it first,
// tracking as t says.
func (s *session) ownOn(t *clients.Tracking, addr string) (*upstream.Conn, error) {
	c := t.Own[addr]
	if c != nil && !c.Dead() {
		return c, nil
	}
	st := s.p.sharedState(s.key())
	st.Name, st.LibName, st.LibVer = s.name, s.libName, s.libVer
	st.Node = addr
	if t.On {
		cmd, err := s.trackingCommand(t, addr)
		if err != nil {
			return nil, err
		}
		st.Tracking = cmd
	}
	nc, err := s.p.dial(st, s)
	if err != nil {
		return nil, err
	}
	if c == nil {
		s.p.stats.dedicated.Add(1)
	}
	t.Own[addr] = nc
	return nc, nil
}

// bcastEverywhere, for BCAST in front of a cluster, opens the session's
// own connection on every primary, tracking as t says, before the client
// hears that tracking is on: a prefix's keys change on every node, whether
// or not the session read there. It reports false, having answered the
// client (Valkey's refusal of the options, or why a node cannot be
// reached), when one fails.
func (s *session) bcastEverywhere(t *clients.Tracking) bool {
	m := s.p.cl.Map()
	if m == nil {
		return true
	}
	for _, addr := range m.Primaries {
		if addr == s.ded.Addr() {
			continue
		}
		if _, err := s.ownOn(t, addr); err != nil {
			s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
			return false
		}
	}
	return true
}

// setDed makes c the session's current own connection.
func (s *session) setDed(c *upstream.Conn) {
	s.dedMu.Lock()
	s.ded = c
	s.dedMu.Unlock()
}

// sendMuted sends raw on c as the session's, its reply not given to the
// client; the current connection stays what it was.
func (s *session) sendMuted(c *upstream.Conn, raw []byte) {
	cur, mute := s.ded, s.mute
	s.setDed(c)
	s.mute = true
	s.forward(raw, nil)
	s.mute = mute
	s.setDed(cur)
}

// holdForNode answers CLIENT CACHING YES|NO (where the tracking mode
// takes it) and MULTI with +OK, and holds them for the connection of the
// next command that goes to Valkey: with connections on several nodes,
// where they are sent is only known then. It reports whether it did.
func (s *session) holdForNode(args [][]byte) bool {
	t := s.trk
	if s.ded == nil || s.ded.Streaming() {
		return false
	}
	switch id := commands.IDOf(args[0]); {
	case id == commands.IDMulti && len(args) == 1 && !s.inMulti:
		s.inMulti, s.multiShape, s.multiDur = true, s.multiShape[:0], nil
	case id == commands.IDClient && len(args) == 3 && commands.SubOf(args) == commands.ClientCaching && !s.inMulti:
		yes := resp.EqualFold(args[2], "yes")
		if !t.On || !(yes && t.Has("optin") || resp.EqualFold(args[2], "no") && t.Has("optout")) {
			return false // Valkey's error
		}
	default:
		return false
	}
	held := append(t.Held, resp.AppendCommand(nil, args...))
	t.Held = nil // not sent ahead of this reply (local)
	s.local(resp.AppendSimple(nil, "OK"))
	t.Held = held
	t.MultiHeld = s.inMulti
	return true
}

// sendHeld sends what holdForNode held on the current connection, ahead of
// the command being handled.
func (s *session) sendHeld() {
	t := s.trk
	if t == nil || len(t.Held) == 0 {
		return
	}
	held := t.Held
	t.Held, t.MultiHeld = nil, false
	mute := s.mute
	s.mute = true
	for _, raw := range held {
		s.forward(raw, nil)
	}
	s.mute = mute
}

// closeTracking closes the session's other own connections and its relays
// when it ends (finish closes the current one).
func (s *session) closeTracking() {
	t := s.trk
	if t == nil {
		return
	}
	for _, c := range t.Own {
		if c != s.ded {
			s.p.stats.dedicated.Add(-1)
			c.Close()
		}
	}
	t.CloseRelays()
}

// sessionByID is the proxy's client with that CLIENT ID, if connected.
func (p *Proxy) sessionByID(id uint64) *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.sessions {
		if s.id == id {
			return s
		}
	}
	return nil
}

// mirror sends raw, which changes what a connection is (HELLO, AUTH,
// RESET) and which the current connection accepted, to the session's
// other own connections too, their replies muted.
func (s *session) mirror(raw []byte) {
	if !s.spreads() {
		return
	}
	for _, c := range s.trk.Own {
		if c != s.ded && !c.Dead() {
			s.sendMuted(c, raw)
		}
	}
}

// resetTracking is what RESET does beyond the current connection: the
// session's others are reset too (tracking off, RESP2, logged out), so
// that they stay what the current one is.
func (s *session) resetTracking() {
	t := s.trk
	if t == nil {
		return
	}
	t.On, t.Held, t.MultiHeld = false, nil, false
	s.mirror(resp.AppendCommandStrings(nil, "RESET"))
	t.CloseRelays()
	t.Relays, t.Target, t.RedirectAt = nil, nil, 0
}
