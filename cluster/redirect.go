package cluster

import (
	"bytes"
	"net"
	"strconv"
)

// RedirectKind is what a node's error reply asks of a cluster client.
type RedirectKind uint8

const (
	NoRedirect RedirectKind = iota // any other reply: the client's as it is
	Moved                          // -MOVED slot host:port: the slot lives there now
	Ask                            // -ASK slot host:port: this once, there, after ASKING
	TryAgain                       // -TRYAGAIN: a multi-key command during a slot's migration
)

var (
	errMoved = []byte("-MOVED ")
	errAsk   = []byte("-ASK ")
	errTry   = []byte("-TRYAGAIN")
)

// ParseRedirect reads the reply fr, which the node at from gave: its kind
// and, for MOVED and ASK, the node it names (from when the address cannot
// be read).
func ParseRedirect(fr []byte, from string) (k RedirectKind, to string) {
	switch {
	case bytes.HasPrefix(fr, errMoved):
		return Moved, redirectTarget(fr, from)
	case bytes.HasPrefix(fr, errAsk):
		return Ask, redirectTarget(fr, from)
	case bytes.HasPrefix(fr, errTry):
		return TryAgain, from
	}
	return NoRedirect, from
}

// redirectTarget reads host:port from "-MOVED 3999 host:port\r\n" (or ASK).
// A node that announces no hostname sends ":port": the host is then the
// one of the node that answered.
func redirectTarget(fr []byte, from string) string {
	line := bytes.TrimRight(fr, "\r\n")
	f := bytes.Fields(line)
	if len(f) < 3 {
		return from
	}
	addr := string(f[2])
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return from
	}
	if host == "" {
		host, _, _ = net.SplitHostPort(from)
		return net.JoinHostPort(host, port)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return from
	}
	return addr
}
