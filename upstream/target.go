package upstream

import (
	"context"
	"fmt"
)

// Target is where new connections to Valkey go: the configured address,
// the primary a Sentinel names now, or in front of a cluster any node of
// it (a connection for a node names it: State.Node). Filled in once, before
// the first connection opens.
type Target struct {
	Addr     string    // upstream.addr
	Sentinel *Sentinel // nil without Sentinel
	Cluster  Nodes     // nil in front of one primary
}

// Nodes is the cluster behind the proxy, as a Target sees it.
type Nodes interface {
	AnyNode() (string, error)
	// RefreshSoon makes the cluster's map be read again soon.
	RefreshSoon()
}

// Where is the address a new connection goes to now; with Sentinel it is
// asked by ctx's deadline when not known.
func (t *Target) Where(ctx context.Context) (string, error) {
	switch {
	case t.Cluster != nil:
		return t.Cluster.AnyNode()
	case t.Sentinel != nil:
		return t.Sentinel.Primary(ctx)
	}
	return t.Addr, nil
}

// Name names the upstream in messages and logs: the configured address,
// in front of a cluster a node of it, or with Sentinel the master's name
// and the primary's address Sentinel gave last (upstream.addr, unused
// then, keeps its default).
func (t *Target) Name() string {
	switch {
	case t.Cluster != nil:
		if addr, err := t.Cluster.AnyNode(); err == nil {
			return addr
		}
		return t.Addr
	case t.Sentinel != nil:
		addr := t.Sentinel.Known()
		if addr == "" {
			return fmt.Sprintf("Sentinel master %q (primary unknown)", t.Sentinel.Master)
		}
		return fmt.Sprintf("%s (Sentinel master %q)", addr, t.Sentinel.Master)
	}
	return t.Addr
}

// Forget makes the next Where ask again after a dial failed: Sentinel
// (the primary may have moved before Sentinel announced it), or the
// cluster's map (the node may have failed over).
func (t *Target) Forget() {
	switch {
	case t.Cluster != nil:
		t.Cluster.RefreshSoon()
	case t.Sentinel != nil:
		t.Sentinel.Forget()
	}
}
