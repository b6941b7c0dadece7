package admin

import (
	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
)

// auth logs the connection in. Attempts from a client host that failed too
// often are refused unchecked (Options.Limiter), so a password cannot be
// guessed faster than FailLimit tries per FailWindow.
func (a *Admin) auth(c Conn, args [][]byte) []byte {
	l := a.logins.Load()
	if l.Open() {
		return resp.AppendError(nil, errNoPassword)
	}
	user, pass := config.DefaultAdminUser, args[0]
	if len(args) == 2 {
		user, pass = string(args[0]), args[1]
	}
	host := c.Host()
	if wait := a.o.Limiter.Blocked(host); wait > 0 {
		a.AuthLimited.Add(1)
		return resp.AppendError(nil, errAuthLimit(host, a.o.FailLimit, a.o.FailWindow, wait))
	}
	role, ok := l.check(user, pass)
	if !ok {
		a.AuthFailures.Add(1)
		a.authed.Delete(c.ID())
		limited := a.o.Limiter.Failed(host)
		a.o.Log.Warn("wrong LOCKPROXY AUTH user or password", "client", c.Addr(), "client_name", c.Name(),
			"user", clip(user, 64), "limit_reached", limited)
		if l.named {
			return resp.AppendError(nil, errWrongUserPass)
		}
		return resp.AppendError(nil, errWrongPass)
	}
	a.authed.Store(c.ID(), login{user: user, role: role})
	return resp.AppendSimple(nil, "OK")
}
