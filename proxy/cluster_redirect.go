package proxy

import (
	"bytes"
	"sync"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// clusterPend is the cluster part of a pending command (nil when the proxy
// is not in front of a cluster).
func (s *session) clusterPend(raw []byte) any {
	if s.p.cl == nil {
		return nil
	}
	if s.ded != nil {
		return &cluster.Cmd{Proto: s.proto, Own: true}
	}
	return &cluster.Cmd{Raw: bytes.Clone(raw), Proto: s.proto, Login: s.login}
}

// redirects is a session's queue of replies to follow, and whether its
// goroutine runs. The upstream reader that received a MOVED hands it over
// and goes on with other clients' replies; the reply the client gets is
// delivered in its place among the session's (package replies) when the
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
		fr := s.p.cl.Follow(j.p.Route.(*cluster.Cmd), j.fr, j.from)
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
