package proxy

import (
	"maps"

	"github.com/lockproxy/lockproxy/clients"
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
// (redirectedHere), so Valkey finds the redirect broken and says so
// (tracking-redir-broken), as it does directly.

// tracking is a session's client-side caching state, set when Valkey first
// accepted its CLIENT TRACKING. Only the session touches it.
type tracking struct {
	// on: tracking is on; args is the CLIENT TRACKING ON command as the
	// client sent it, replayed on every new connection of the session's
	// (REDIRECT's id swapped for the node's relay), redirectAt the place
	// of REDIRECT's id in it (0: none).
	on         bool
	args       [][]byte
	redirectAt int
	target     *session // REDIRECT's client

	// own: in front of a cluster, the session's own connection on each
	// node, the current one (s.ded) included.
	own map[string]*upstream.Conn
	// relays: per node, the connection Valkey redirects invalidations to.
	relays map[string]*clients.Relay

	// held: CLIENT CACHING and a MULTI, answered +OK by the proxy and sent
	// (their replies muted) on the connection of the next command that
	// goes to Valkey: they apply to the node that command runs on.
	held      [][]byte
	multiHeld bool
}

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
	_, kept := cloneArgs(cmd)
	t := &tracking{on: on, args: kept, redirectAt: redirectAt, target: target}
	old := s.trk
	if old != nil {
		t.own, t.held, t.multiHeld = old.own, old.held, old.multiHeld
		if old.target == target {
			t.relays = old.relays
		}
	}
	if t.own == nil && s.p.cl != nil {
		t.own = map[string]*upstream.Conn{s.ded.Addr(): s.ded}
	}
	st, err := t.command(s, s.ded.Addr())
	if err != nil {
		s.local(resp.AppendError(nil, s.p.dialErrorText(err)))
		return true
	}
	fresh := map[*upstream.Conn]bool{}
	if on && s.p.cl != nil && clients.TrackingHas(t.args, "bcast") {
		had := maps.Clone(t.own)
		if !s.bcastEverywhere(t) {
			return true
		}
		for addr, c := range t.own {
			if had[addr] != c {
				fresh[c] = true
			}
		}
	}
	if !s.askDedicated(resp.AppendCommandStrings(nil, st...)) {
		// Valkey refused it: nothing changed. Its reply was the client's.
		if old == nil || old.target != target {
			t.closeRelays()
		}
		return true
	}
	if old != nil && old.target != target {
		old.closeRelays()
	}
	s.trk = t
	s.tracking = on
	// The session's connections on the other nodes track the same way
	// (those just opened for BCAST do already).
	cur := s.ded
	for addr, c := range t.own {
		if c == cur || c.Dead() || fresh[c] {
			continue
		}
		st, err := t.command(s, addr)
		if err != nil {
			c.Fail(err) // cannot track there as asked: the session ends, told why
			continue
		}
		s.sendMuted(c, resp.AppendCommandStrings(nil, st...))
	}
	s.setDed(cur)
	return true
}

// command is CLIENT TRACKING as the session's connection on node must get
// it: REDIRECT's id is that of the node's relay, opened on first use.
func (t *tracking) command(s *session, node string) ([]string, error) {
	var id int64
	if t.redirectAt > 0 {
		r, err := t.relayOn(s, node)
		if err != nil {
			return nil, err
		}
		id = r.ID
	}
	return clients.TrackingCommand(t.args, t.redirectAt, id), nil
}

// relayOn returns the node's relay for the session's REDIRECT target,
// opening it first: a RESP3 connection logged in as the session's are
// (only its CLIENT ID is asked), whose pushes go to the target.
func (t *tracking) relayOn(s *session, node string) (*clients.Relay, error) {
	if r := t.relays[node]; r != nil && !r.C.Dead() {
		return r, nil
	}
	target := t.target
	if r := target.redirTo.Take(node, s.login); r != nil {
		// Another session redirects to the same target there: one
		// relay takes both, so the target gets the invalidations in the
		// order Valkey sent them (two relays' readers race).
		t.setRelay(node, r)
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
	c := s.p.startUp(nc, addr, nil, func(push []byte) { target.invalidated(push) })
	r := &clients.Relay{C: c, ID: id, Node: node, Login: s.login}
	if !target.redirTo.Add(r) {
		c.Close() // the target quit meanwhile: the redirect is broken
	}
	t.setRelay(node, r)
	// TRACKINGINFO, GETREDIR and a broken redirect's push name the relay
	// by Valkey's id: p.vids turns it into the target's.
	s.p.vids.Add(id, target.id)
	return r, nil
}

// setRelay makes r the session's relay on node, letting go of the one it
// had there.
func (t *tracking) setRelay(node string, r *clients.Relay) {
	if t.relays == nil {
		t.relays = map[string]*clients.Relay{}
	}
	if old := t.relays[node]; old != nil && old != r && t.target.redirTo.Release(old) {
		old.C.Close()
	}
	t.relays[node] = r
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
	case !t.on:
		s.local(resp.AppendInt(nil, -1))
	case t.target == nil:
		s.local(resp.AppendInt(nil, 0))
	default:
		s.local(resp.AppendInt(nil, int64(t.target.id)))
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
func (s *session) ownOn(t *tracking, addr string) (*upstream.Conn, error) {
	c := t.own[addr]
	if c != nil && !c.Dead() {
		return c, nil
	}
	st := s.p.sharedState(s.key())
	st.Name, st.LibName, st.LibVer = s.name, s.libName, s.libVer
	st.Node = addr
	if t.on {
		cmd, err := t.command(s, addr)
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
	t.own[addr] = nc
	return nc, nil
}

// bcastEverywhere, for BCAST in front of a cluster, opens the session's
// own connection on every primary, tracking as t says, before the client
// hears that tracking is on: a prefix's keys change on every node, whether
// or not the session read there. It reports false, having answered the
// client (Valkey's refusal of the options, or why a node cannot be
// reached), when one fails.
func (s *session) bcastEverywhere(t *tracking) bool {
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
	switch id := idOf(args[0]); {
	case id == cMulti && len(args) == 1 && !s.inMulti:
		s.inMulti, s.multiShape, s.multiDur = true, s.multiShape[:0], nil
	case id == cClient && len(args) == 3 && resp.EqualFold(args[1], "caching") && !s.inMulti:
		yes := resp.EqualFold(args[2], "yes")
		if !t.on || !(yes && clients.TrackingHas(t.args, "optin") || resp.EqualFold(args[2], "no") && clients.TrackingHas(t.args, "optout")) {
			return false // Valkey's error
		}
	default:
		return false
	}
	held := append(t.held, resp.AppendCommand(nil, args...))
	t.held = nil // not sent ahead of this reply (local)
	s.local(resp.AppendSimple(nil, "OK"))
	t.held = held
	t.multiHeld = s.inMulti
	return true
}

// sendHeld sends what holdForNode held on the current connection, ahead of
// the command being handled.
func (s *session) sendHeld() {
	t := s.trk
	if t == nil || len(t.held) == 0 {
		return
	}
	held := t.held
	t.held, t.multiHeld = nil, false
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
	for _, c := range t.own {
		if c != s.ded {
			s.p.stats.dedicated.Add(-1)
			c.Close()
		}
	}
	t.closeRelays()
}

func (t *tracking) closeRelays() {
	for _, r := range t.relays {
		if t.target == nil || t.target.redirTo.Release(r) {
			r.C.Close()
		}
	}
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
	for _, c := range s.trk.own {
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
	t.on, t.held, t.multiHeld = false, nil, false
	s.mirror(resp.AppendCommandStrings(nil, "RESET"))
	t.closeRelays()
	t.relays, t.target, t.redirectAt = nil, nil, 0
}
