package clients

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// Clients that log in as a user of their own (AUTH, HELLO ... AUTH, with
// credentials other than the proxy's) share connections too: a pool per
// login, whose connections log in with that login's credentials, so Valkey
// checks every command against that user's rights, as it would on the
// client's own connection. Valkey decides whether a login is accepted (the
// proxy asks it on a connection of its own, for every AUTH); only an
// accepted login is kept here, so refused attempts leave nothing behind.
// What is kept is what a pool needs to open connections later (reconnects,
// new cluster nodes), as the proxy keeps its own credentials.

// Creds are a login's user ("" for AUTH <password>) and password.
type Creds struct{ User, Pass string }

// Logins are the logins Valkey accepted, by LoginID. Entries stay: pools
// name them, and their number is that of distinct accepted credentials.
// The zero value is empty and ready.
type Logins struct {
	mu   sync.Mutex
	byID map[string]Creds
}

// LoginID names a login without holding its password: the user, then the
// password's SHA-256.
func LoginID(user, pass string) string {
	h := sha256.Sum256([]byte(pass))
	return user + "\x00" + hex.EncodeToString(h[:])
}

// Add keeps a login Valkey accepted and returns its id.
func (l *Logins) Add(user, pass string) string {
	id := LoginID(user, pass)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byID == nil {
		l.byID = map[string]Creds{}
	}
	l.byID[id] = Creds{user, pass}
	return id
}

// Creds returns the credentials of the login id; false when none was kept.
func (l *Logins) Creds(id string) (Creds, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.byID[id]
	return c, ok
}
