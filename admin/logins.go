package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"reflect"

	"github.com/lockproxy/lockproxy/config"
)

// Logins is the set of admin credentials in force, built from
// admin.password and admin.users and swapped whole on reload. Passwords are
// kept only as their SHA-256, whichever way the file gave them.
type Logins struct {
	users map[string]adminUser
	// named: admin.users is set. Then INFO lockproxy needs a login too,
	// and the errors speak of users rather than of one password.
	named bool
	// from is what the logins were built from, to tell whether a reload
	// changed them.
	from struct {
		password string
		users    []config.AdminUser
	}
}

type adminUser struct {
	hash [sha256.Size]byte
	role config.AdminRole
}

// NewLogins builds the credentials of admin.password (user "default",
// role operate) and admin.users.
func NewLogins(password string, users []config.AdminUser) *Logins {
	l := &Logins{users: map[string]adminUser{}, named: len(users) > 0}
	l.from.password, l.from.users = password, users
	if password != "" {
		l.users[config.DefaultAdminUser] = adminUser{hash: sha256.Sum256([]byte(password)), role: config.AdminOperate}
	}
	for _, u := range users {
		au := adminUser{role: u.Role}
		if au.role == "" {
			au.role = config.AdminRead
		}
		if u.PasswordSHA256 != "" {
			// Validated as 64 hex digits; a hash that does not decode
			// stays all zeros, which no password hashes to.
			_, _ = hex.Decode(au.hash[:], []byte(u.PasswordSHA256))
		} else {
			au.hash = sha256.Sum256([]byte(u.Password))
		}
		l.users[u.Name] = au
	}
	return l
}

// Open reports that no credentials are configured: every LOCKPROXY
// subcommand is open.
func (l *Logins) Open() bool { return len(l.users) == 0 }

// Named reports that admin.users is set.
func (l *Logins) Named() bool { return l.named }

// same reports whether l was built from the same settings.
func (l *Logins) same(password string, users []config.AdminUser) bool {
	return l.from.password == password && reflect.DeepEqual(l.from.users, users)
}

// check returns the role of user when password is its password. It does the
// same work for a name that does not exist, so the time taken does not tell
// which names do.
func (l *Logins) check(user string, password []byte) (config.AdminRole, bool) {
	u, known := l.users[user]
	h := sha256.Sum256(password)
	match := subtle.ConstantTimeCompare(h[:], u.hash[:]) == 1
	if !known || !match {
		return "", false
	}
	return u.role, true
}

// login is what an authenticated connection is logged in as.
type login struct {
	user string
	role config.AdminRole
}
