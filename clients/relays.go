package clients

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// Relay is a connection of the proxy's own that takes a client's
// redirected invalidations on one node (RESP3: Valkey then pushes
// `invalidate` to it whatever the target speaks), its Valkey id there, and
// the node and login it was opened for.
type Relay struct {
	C           *upstream.Conn
	ID          int64
	Node, Login string
}

// Target is a client as the clients that redirect their invalidations to
// it see it (CLIENT TRACKING ... REDIRECT): its id, how an invalidation
// reaches it, and the relays that take the invalidations redirected to it,
// one per node and login, shared by every client that redirects there (so
// it gets them in the order Valkey sent them: two relays' readers race).
// The relays live no longer than it: when it quits (QUIT, or its
// connection ends) they close first, so Valkey finds the redirect broken
// and tells the tracking clients (tracking-redir-broken) as it does
// directly, where the target's own connection is gone. ID and Deliver are
// set once, before another client can name it.
type Target struct {
	ID      uint64
	Deliver func(push []byte) // an invalidation a relay received

	mu     sync.Mutex
	relays map[*Relay]int // each relay and how many clients use it
	ended  bool
}

// Add records r, used by one client; it reports false when the target
// has quit already (the caller closes r: the redirect is broken).
func (h *Target) Add(r *Relay) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return false
	}
	if h.relays == nil {
		h.relays = map[*Relay]int{}
	}
	h.relays[r] = 1
	return true
}

// Take returns a live relay on node for login, counting one more client
// using it; nil when there is none.
func (h *Target) Take(node, login string) *Relay {
	h.mu.Lock()
	defer h.mu.Unlock()
	for r, n := range h.relays {
		if r.Node == node && r.Login == login && !r.C.Dead() {
			h.relays[r] = n + 1
			return r
		}
	}
	return nil
}

// Release counts one client less using r; it reports true when none is
// left (or r is not counted here): the caller closes it.
func (h *Target) Release(r *Relay) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.relays[r]
	if ok && n > 1 {
		h.relays[r] = n - 1
		return false
	}
	delete(h.relays, r)
	return true
}

// End closes the relays when the target quits. Closing does not wait:
// each relay's end is sent before QUIT's reply leaves, so it is on its way
// to Valkey ahead of any command the client sends after reading the reply.
func (h *Target) End() {
	h.mu.Lock()
	relays := h.relays
	h.relays, h.ended = nil, true
	h.mu.Unlock()
	for r := range relays {
		r.C.Close()
	}
}

// AskID asks a connection no reader serves yet for its CLIENT ID (a
// relay's, which REDIRECT then names), within wait.
func AskID(nc net.Conn, wait time.Duration) (int64, error) {
	_ = nc.SetDeadline(time.Now().Add(wait))
	if _, err := nc.Write(resp.AppendCommandStrings(nil, "CLIENT", "ID")); err != nil {
		return 0, err
	}
	buf, n, err := upstream.ReadReply(nc, make([]byte, 0, 64))
	if err != nil {
		return 0, err
	}
	if n < 4 || buf[0] != ':' {
		return 0, errors.New("unexpected reply to CLIENT ID: " + string(bytes.TrimSpace(buf[:n])))
	}
	id, ok := valkeynum.String2ll(buf[1 : n-2])
	if !ok {
		return 0, errors.New("unexpected reply to CLIENT ID: " + string(bytes.TrimSpace(buf[:n])))
	}
	_ = nc.SetDeadline(time.Time{})
	return id, nil
}
