package admin

import (
	"github.com/lockproxy/lockproxy/config"
)

// Denied returns the error text for running what (a LOCKPROXY subcommand,
// or INFO lockproxy) on connection id, or "" when it may. private: not
// opened by admin.open_read; operate: needs role operate.
func (a *Admin) Denied(id uint64, what string, private, operate bool) string {
	l := a.logins.Load()
	if l.Open() {
		// No credentials: open only where no one else can connect.
		if a.o.Loopback || (a.o.OpenRead && !private && !operate) {
			return ""
		}
		return errNoCredentials(what, a.o.Listen)
	}
	if v, ok := a.authed.Load(id); ok {
		login := v.(login)
		if operate && login.role != config.AdminOperate {
			return errNoPerm(what, login.user, login.role)
		}
		return ""
	}
	if a.o.OpenRead && !private {
		return ""
	}
	return errNoAuth(what, l.named)
}

// InfoDenied is the error text for INFO lockproxy on connection id, or
// "". Under admin.password alone the section stays open, as it always
// was; admin.users make it follow the read role.
func (a *Admin) InfoDenied(id uint64) string {
	if !a.logins.Load().named {
		return ""
	}
	return a.Denied(id, "INFO lockproxy", false, false)
}

// Logout forgets connection id's login (RESET, or the connection closed).
func (a *Admin) Logout(id uint64) { a.authed.Delete(id) }

// loggedIn reports whether connection id gave LOCKPROXY AUTH.
func (a *Admin) loggedIn(id uint64) bool {
	_, ok := a.authed.Load(id)
	return ok
}

// SetLogins puts the credentials of a reloaded configuration in force.
// New credentials log every connection out; the same ones change nothing.
func (a *Admin) SetLogins(password string, users []config.AdminUser) {
	if a.logins.Load().same(password, users) {
		return
	}
	a.logins.Store(NewLogins(password, users))
	a.authed.Range(func(k, _ any) bool { a.authed.Delete(k); return true })
}

// MayReconfigure reports whether connection id logged in (LOCKPROXY
// AUTH) as an admin with role operate: the gate of the commands that
// reconfigure Valkey asks it under admin_commands: admin, for plain
// commands and scripts. Unlike Denied's rule for the operate subcommands,
// a loopback listener without credentials opens nothing here: whoever
// can reach lockproxy could otherwise reopen Valkey (ACL SETUSER), so
// without credentials nobody may, and the refusal says how to allow it.
func (a *Admin) MayReconfigure(id uint64) bool {
	v, ok := a.authed.Load(id)
	return ok && v.(login).role == config.AdminOperate
}
