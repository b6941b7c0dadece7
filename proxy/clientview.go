package proxy

import (
	"time"

	"github.com/lockproxy/lockproxy/clients"
)

// clientView is a session as package clients sees it for CLIENT LIST,
// INFO and KILL: what it published, its connection read now, and closing
// it.
type clientView struct{ s *session }

func (c clientView) Snap() *clients.Snap { return c.s.snap.Load() }

func (c clientView) Conn() clients.Conn {
	s := c.s
	cmd := "NULL"
	if p := s.lastCmd.Load(); p != nil {
		cmd = *p
	}
	s.outMu.Lock()
	omem := s.out.Len() + s.writing
	s.outMu.Unlock()
	return clients.Conn{
		ID: s.id, Addr: s.addr, Laddr: s.laddr, Fd: s.sockFd,
		Since: s.since, LastActive: time.Unix(0, s.lastActive.Load()),
		Blocked: s.blocked.Load(), Omem: omem, Cmd: cmd,
	}
}

func (c clientView) Abort() { c.s.abort() }

// clientViews is the proxy's sessions in id order, as package clients
// sees them.
func (p *Proxy) clientViews() []clients.Client {
	all := p.allSessions()
	out := make([]clients.Client, len(all))
	for i, x := range all {
		out[i] = clientView{x}
	}
	return out
}
