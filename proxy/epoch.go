package proxy

import (
	"errors"
	"net"
)

// learnEpoch learns, on a new upstream connection (before it is handed
// out, its handshake done), what the grants need to know of the epoch
// they mint under (package locks: Keeper.Learn, in front of a cluster
// Keeper.LearnNode). Without lock rules it does nothing: nothing mints a
// token, and a reload that switches rules on reopens the shared
// connections (reload.go). See docs/failover.md.
func (p *Proxy) learnEpoch(nc net.Conn, db int) error {
	if !p.decider.Load().Active() {
		return nil
	}
	if p.cl != nil {
		return p.locks.LearnNode(nc)
	}
	return p.locks.Learn(nc, db)
}

var errRulesOn = errors.New("lock rules were switched on: the connection is reopened to learn the primary's run id")

// reopenShared fails every shared upstream connection (sessions' own keep
// theirs: a transaction or a subscription would be lost).
func (p *Proxy) reopenShared(err error) { p.reopen(err, false) }
