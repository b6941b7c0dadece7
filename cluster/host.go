package cluster

import (
	"log/slog"
	"sync"
)

// Host is what a View needs from the proxy: the one seam between the
// cluster's logic and the proxy's connections, goroutines and words. It is
// filled in once, before the View starts, and only read after.
type Host struct {
	// WG holds the refresher goroutine (the proxy waits for it on close).
	WG  *sync.WaitGroup
	Log *slog.Logger
	// Do sends cmds to the node at addr in one write and returns their
	// replies, on a request-reply connection of protocol proto logged in
	// as login ("": the proxy's login). It may wait for the node: never
	// called on an event loop.
	Do func(addr string, proto int, login string, cmds ...[]byte) ([][]byte, error)
	// TLS reports whether the proxy dials the nodes with TLS (a CLUSTER
	// SHARDS node's tls-port is then its address).
	TLS func() bool

	// The client-visible error texts, each a line of the proxy's
	// catalogue (without the leading '-'): a node that could not be
	// reached, no slot map read yet (the last refresh's error), a slot no
	// primary serves, too many redirects in a row, and a redirect of a
	// command on a client's own connection.
	LostText      func(addr string, err error) string
	NoMapText     func(err error) string
	DownText      func(slot uint16) string
	RedirectsText func(n int) string
	OwnMovedText  func(to string) string
}
