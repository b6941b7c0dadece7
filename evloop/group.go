package evloop

import "sync"

// A Group is the proxy's event loops: n of them, started with the first
// client, each new client and each new shared upstream connection given to
// the next in turn.
type Group struct {
	n   int
	cfg Config

	mu     sync.Mutex
	loops  []*Loop
	next   int  // the loop the next client goes to
	upNext int  // the loop that reads the next upstream connection
	off    bool // none could be started, or they were closed: goroutines only
}

// NewGroup is a group of n loops started with cfg; none is started yet.
func NewGroup(n int, cfg Config) *Group { return &Group{n: n, cfg: cfg} }

// Client picks the loop for a new client, starting the loops with the
// first one; nil when clients get goroutines instead (the loops could not
// be started, which is logged once, or were closed).
func (g *Group) Client() *Loop {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off {
		return nil
	}
	if g.loops == nil {
		for range g.n {
			l, err := New(g.cfg)
			if err != nil {
				g.cfg.Log.Warn("serving clients without event loops", "err", err)
				for _, l := range g.loops {
					l.Close()
				}
				g.loops, g.off = nil, true
				return nil
			}
			g.loops = append(g.loops, l)
		}
	}
	l := g.loops[g.next%len(g.loops)]
	g.next++
	return l
}

// Upstream picks the loop that reads a new shared upstream connection;
// nil when no loop runs (before the first client, or without loops).
func (g *Group) Upstream() *Loop {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.loops) == 0 {
		return nil
	}
	l := g.loops[g.upNext%len(g.loops)]
	g.upNext++
	return l
}

// Wake makes every loop pump each of its clients again (shutdown).
func (g *Group) Wake() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range g.loops {
		l.Wake()
	}
}

// Close stops the loops; every client has left them by then. No loop is
// started after.
func (g *Group) Close() {
	g.mu.Lock()
	loops := g.loops
	g.loops = nil
	g.off = true
	g.mu.Unlock()
	for _, l := range loops {
		l.Close()
	}
}
