package proxy

import (
	"bytes"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// clusterCmd is what following a redirect needs of a command sent to a
// cluster node: its bytes (a copy: the client's read buffer moves on) and
// the protocol its reply must be in.
type clusterCmd struct {
	raw   []byte
	proto int
	login string // the client's own login, if any: the retry logs in as it
	// own: the command went on the client's own connection (a
	// transaction, a blocking wait, an AUTH sent on it), whose state another
	// node does not have: a redirect is not followed there but answered
	// with an error, so the client never sees MOVED or ASK.
	own bool
}

// clusterPend is the cluster part of a pending command (nil when the proxy
// is not in front of a cluster).
func (s *session) clusterPend(raw []byte) any {
	if s.p.cl == nil {
		return nil
	}
	if s.ded != nil {
		return &clusterCmd{proto: s.proto, own: true}
	}
	return &clusterCmd{raw: bytes.Clone(raw), proto: s.proto, login: s.login}
}

// Bounds on following one command: redirects in a row (a map that keeps
// moving), and TRYAGAIN retries (a multi-key command during a slot's
// migration, its keys on both nodes until the last batch moves).
const (
	maxRedirects  = 5
	maxTryAgain   = 8
	tryAgainPause = 10 * time.Millisecond
)

var askingCmd = resp.AppendCommandStrings(nil, "ASKING")

// redirects is a session's queue of replies to follow, and whether its
// goroutine runs. The upstream reader that received a MOVED hands it over
// and goes on with other clients' replies; the reply the client gets is
// delivered in its place among the session's (reorder.go) when the
// goroutine has it.
type redirects struct {
	mu      sync.Mutex
	q       []redirectJob
	running bool
}

// redirectJob is one command's redirect: its pending entry, the error reply
// (a copy: the reader's buffer moves on) and the node that gave it.
type redirectJob struct {
	p    upstream.Pend
	fr   []byte
	from string
}

// Redirect queues the redirect fr, which the command of p got from the node
// from, for the session's redirect goroutine, starting it when it is not
// running. One goroutine per session follows them one at a time, in the
// order they came: two commands of a client redirected to one node reach it
// in the client's order.
func (s *session) Redirect(p upstream.Pend, fr []byte, from string) {
	r := &s.redirects
	r.mu.Lock()
	r.q = append(r.q, redirectJob{p: p, fr: bytes.Clone(fr), from: from})
	start := !r.running
	r.running = true
	r.mu.Unlock()
	if start {
		go s.followRedirects()
	}
}

// followRedirects follows the queued redirects until none is left, and
// delivers each command's final reply in its place.
func (s *session) followRedirects() {
	r := &s.redirects
	for {
		r.mu.Lock()
		if len(r.q) == 0 {
			r.q, r.running = nil, false
			r.mu.Unlock()
			return
		}
		j := r.q[0]
		r.q[0] = redirectJob{}
		r.q = r.q[1:]
		r.mu.Unlock()
		fr := s.p.redirected(j.p.Route.(*clusterCmd), j.fr, j.from)
		if j.p.Retry != nil && upstream.IsNoScript(fr) {
			// The node asked had the script flushed: as after a
			// NOSCRIPT on the first node, when retrying would reorder.
			fr = resp.AppendError(nil, errScriptFlushed)
		}
		if j.p.Hook != nil {
			fr = j.p.Hook(fr)
		}
		if j.p.Mute {
			fr = nil
		}
		s.deliverN(j.p.Seq, fr, 1)
	}
}

// redirected is the reply the client gets for the error reply fr, which a
// command sent to the node from received: a MOVED is followed to the node it
// names (and the map read again), an ASK with ASKING to the importing node,
// a TRYAGAIN is retried where the command first went, a few times; any other
// error is the client's as it is. It waits for the node it asks, on the
// session's redirect goroutine (or its own, for a split's parts): never on
// an upstream reader or an event loop.
func (p *Proxy) redirected(cc *clusterCmd, fr []byte, from string) []byte {
	hops, tries := 0, 0
	for {
		var cmds [][]byte
		kind, to := cluster.ParseRedirect(fr, from)
		switch {
		case kind == cluster.Moved, kind == cluster.Ask:
			moved := kind == cluster.Moved
			if moved {
				p.cl.moved.Add(1)
				p.cl.refreshSoon()
			} else {
				p.cl.asked.Add(1)
			}
			if cc.own {
				return resp.AppendError(nil, errClusterOwnMoved(to))
			}
			if hops++; hops > maxRedirects {
				return resp.AppendError(nil, errClusterRedirects(maxRedirects))
			}
			cmds = [][]byte{cc.raw}
			if !moved {
				cmds = [][]byte{askingCmd, cc.raw}
			}
		case kind == cluster.TryAgain && !cc.own && tries < maxTryAgain:
			// Valkey's own TRYAGAIN once the retries are spent: the
			// client may retry it later, as cluster clients do.
			tries++
			p.cl.tryAgain.Add(1)
			time.Sleep(time.Duration(tries) * tryAgainPause)
			cmds = [][]byte{cc.raw}
		default:
			return fr
		}
		r, err := p.nodeDo(to, cc.proto, cc.login, cmds...)
		if err != nil {
			p.cl.refreshSoon()
			return resp.AppendError(nil, errUpstreamLost(to, err))
		}
		fr = r[len(r)-1]
		if len(fr) == 0 || fr[0] != '-' {
			return fr
		}
	}
}
