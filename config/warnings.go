package config

import (
	"fmt"
	"net"
)

// Warnings are settings that are valid but almost certainly not meant.
// check-config prints them; the proxy logs them at start. Each names its
// setting first.
func (c *Config) Warnings() []string {
	var w []string
	for i, r := range c.Locks {
		if r.Pattern == "*" {
			w = append(w, fmt.Sprintf(`locks[%d].pattern: "*" matches every key, so every DEL, SET and EXPIRE of any key is handled as a lock command; use a pattern that names your locks (e.g. "*:lock")`, i))
		}
	}
	if c.Upstream.Addr != "" && sameEndpoint(c.Listen, c.Upstream.Addr) {
		w = append(w, fmt.Sprintf("listen: %s is upstream.addr (%s): lockproxy would forward every command to itself; listen on another port", c.Listen, c.Upstream.Addr))
	}
	if !c.ListenLoopback() && c.Admin.Password == "" && len(c.Admin.Users) == 0 {
		w = append(w, fmt.Sprintf("admin: listen %s is not loopback and no admin.password or admin.users is set, so LOCKPROXY's admin subcommands (RELOAD, STATS, LOCKS ...) are refused to every client; set one", c.Listen))
	}
	return w
}

// sameEndpoint reports whether a listener on listen would receive what is
// sent to addr: the same port, and the same host, or both loopback (a
// listener on every interface counts as loopback: addr elsewhere is
// another machine's, as far as a file can tell).
func sameEndpoint(listen, addr string) bool {
	lh, lp, err1 := net.SplitHostPort(listen)
	ah, ap, err2 := net.SplitHostPort(addr)
	if err1 != nil || err2 != nil || lp != ap {
		return false
	}
	if lh == ah {
		return true
	}
	loop := func(h string) bool {
		if h == "localhost" || h == "" || h == "0.0.0.0" || h == "::" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return loop(lh) && loop(ah)
}
