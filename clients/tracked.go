package clients

import "github.com/lockproxy/lockproxy/upstream"

// Tracking is a client's client-side caching state, set when Valkey first
// accepted its CLIENT TRACKING. Only the client's session touches it; the
// session opens the connections and relays it holds.
type Tracking struct {
	// On: tracking is on; Args is the CLIENT TRACKING ON command as the
	// client sent it, replayed on every new connection of the client's
	// (REDIRECT's id swapped for the node's relay: TrackingCommand),
	// RedirectAt the place of REDIRECT's id in it (0: none), Target the
	// client it names.
	On         bool
	Args       [][]byte
	RedirectAt int
	Target     *Target

	// Own: in front of a cluster, the client's own connection on each
	// node, the current one included.
	Own map[string]*upstream.Conn
	// Relays: per node, the connection Valkey redirects invalidations to.
	Relays map[string]*Relay

	// Held: CLIENT CACHING and a MULTI, answered +OK by the proxy and sent
	// (their replies muted) on the connection of the next command that
	// goes to Valkey: they apply to the node that command runs on.
	// MultiHeld: the MULTI among them.
	Held      [][]byte
	MultiHeld bool
}

// Has reports whether CLIENT TRACKING ON was given the option opt.
func (t *Tracking) Has(opt string) bool { return TrackingHas(t.Args, opt) }

// RelayOn returns the client's live relay on node, or the target's relay
// there for login, shared (another client redirects to the same target
// there); nil when one must be opened (then AddRelay).
func (t *Tracking) RelayOn(node, login string) *Relay {
	if r := t.Relays[node]; r != nil && !r.C.Dead() {
		return r
	}
	if r := t.Target.Take(node, login); r != nil {
		t.setRelay(node, r)
		return r
	}
	return nil
}

// AddRelay makes r, just opened on r.Node, the client's relay there and
// one of its target's; closed at once when the target has quit (the
// redirect is broken, and Valkey says so).
func (t *Tracking) AddRelay(r *Relay) {
	if !t.Target.Add(r) {
		r.C.Close()
	}
	t.setRelay(r.Node, r)
}

// setRelay makes r the client's relay on node, letting go of the one it
// had there.
func (t *Tracking) setRelay(node string, r *Relay) {
	if t.Relays == nil {
		t.Relays = map[string]*Relay{}
	}
	if old := t.Relays[node]; old != nil && old != r && t.Target.Release(old) {
		old.C.Close()
	}
	t.Relays[node] = r
}

// CloseRelays lets go of the client's relays, closing those no other
// client uses.
func (t *Tracking) CloseRelays() {
	for _, r := range t.Relays {
		if t.Target == nil || t.Target.Release(r) {
			r.C.Close()
		}
	}
}
