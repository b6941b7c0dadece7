package proxy

import (
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/internal/valkeynum"
)

// CLIENT PAUSE goes to Valkey: it is a server-wide pause (a failover waits
// for writes to stop), so Valkey must stop every client's writes, this
// proxy's and everyone else's, as it does when asked directly. A write
// Valkey holds back waits on its upstream connection for up to the pause's
// timeout, which may be longer than reply_timeout: for a pause sent through
// this proxy, the reply deadline of every command sent until it ends allows
// for it, so a paused client waits as it would on Valkey instead of being
// told the upstream is lost. A pause sent to Valkey by someone else is not
// seen here.

// notePause records a CLIENT PAUSE or UNPAUSE the session sends.
func (s *session) notePause(args [][]byte) {
	switch {
	case len(args) >= 3 && len(args) <= 4 && commands.SubOf(args) == commands.ClientPause:
		ms, ok := valkeynum.String2ll(args[2])
		if !ok || ms < 0 || ms > int64(365*24*time.Hour/time.Millisecond) {
			return // Valkey refuses it
		}
		until := time.Now().Add(time.Duration(ms) * time.Millisecond).UnixNano()
		for {
			old := s.p.pausedUntil.Load()
			if old >= until || s.p.pausedUntil.CompareAndSwap(old, until) {
				return
			}
		}
	case len(args) == 2 && commands.SubOf(args) == commands.ClientUnpause:
		s.p.pausedUntil.Store(0)
	}
}

// pauseWait is how long a command sent now may be held back by a CLIENT
// PAUSE sent through the proxy; 0 when none is in force. One atomic load
// when there is none.
func (p *Proxy) pauseWait() time.Duration {
	u := p.pausedUntil.Load()
	if u == 0 {
		return 0
	}
	d := time.Until(time.Unix(0, u))
	if d <= 0 {
		p.pausedUntil.CompareAndSwap(u, 0)
		return 0
	}
	return d
}
