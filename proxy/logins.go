package proxy

import (
	"bytes"
	"io"

	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// Clients that log in as a user of their own (AUTH, HELLO ... AUTH, with
// credentials other than the proxy's) share connections too: a pool per
// login (poolKey.login), whose connections log in with that login's
// credentials, so Valkey checks every command against that user's rights,
// as it would on the client's own connection. Every connection the proxy
// opens for such a session — shared, dedicated, one-off, to any cluster
// node — logs in as it (sharedState); none uses the proxy's own
// credentials on its behalf.
//
// Valkey decides whether a login is accepted: a connection of its own logs
// in with the credentials and is closed (checkLogin), for every AUTH, so a
// password changed or a user disabled since is refused as Valkey refuses
// it. Only an accepted login is kept (logins), so refused attempts leave
// nothing behind (the registry is clients.Logins).

// loginCheck is what checking a client's credentials gave: Valkey's reply to
// them, and the login to use from now on when it accepted them ("" when
// not), with the dial of the session's pool under that login (done with the
// check, off the event loop).
type loginCheck struct {
	user, pass []byte // the credentials checked
	reply      []byte
	login      string
	dialed     *dialResult
}

// logIn checks user and pass with Valkey and, when it accepts them, makes
// them the session's login, with proto the protocol its connections will
// speak (HELLO's, or the session's for AUTH). It returns Valkey's reply for
// the client, or nil when the command was put back: on an event loop the
// check, which waits for Valkey, runs off the loop (offLoop) and the
// command is handled again with its result.
func (s *session) logIn(raw, user, pass []byte, proto int) []byte {
	c := s.learned.login
	s.learned.login = nil
	if c == nil || !bytes.Equal(c.user, user) || !bytes.Equal(c.pass, pass) {
		u, pw, r := bytes.Clone(user), bytes.Clone(pass), bytes.Clone(raw)
		key := s.key()
		key.proto = proto
		check := func() *loginCheck { return s.p.checkLogin(r, u, pw, key, int(s.id)) }
		if s.lp != nil {
			s.offLoop(func() { s.learned.login = check() })
			return nil
		}
		c = check()
	}
	if c.login != "" {
		s.loggedIn(c.user, c.pass)
		s.learned.dialed = c.dialed
	}
	return c.reply
}

// loggedIn makes user and pass, which Valkey accepted (or which are the
// proxy's own), the session's login.
func (s *session) loggedIn(user, pass []byte) {
	s.authed = true
	if s.proxyCreds = s.matchesProxyCreds(user, pass); s.proxyCreds {
		s.login, s.loginUser = "", ""
		s.setUserOwner(locks.UserOwner(upstream.UserOrDefault(s.p.opts.Upstream.Username)))
		return
	}
	s.login, s.loginUser = s.p.logins.Add(string(user), string(pass)), upstream.UserOrDefault(string(user))
	s.setUserOwner(locks.UserOwner(s.loginUser))
}

// setUserOwner makes o the session's owner under session: user.
func (s *session) setUserOwner(o string) {
	if o == s.userOwner {
		return
	}
	s.userOwner = o
	s.userOwnerA.Store(&o)
}

// userOwnerSnapshot is the session's owner under session: user, for other
// sessions to read.
func (s *session) userOwnerSnapshot() string {
	if o := s.userOwnerA.Load(); o != nil {
		return *o
	}
	return defaultUserOwner
}

// defaultUserOwner is the owner under session: user of a session that has
// not logged in through lockproxy.
var defaultUserOwner = locks.UserOwner(locks.DefaultUser)

// checkLogin asks Valkey whether user and pass log in, on a connection of
// its own (in front of a cluster, to key.node or some primary), closed after.
// When Valkey accepts them the login is kept and the session's pool under
// it (key, with the login) gets its connection i now.
func (p *Proxy) checkLogin(raw, user, pass []byte, key poolKey, i int) *loginCheck {
	c := &loginCheck{user: user, pass: pass}
	node := key.node
	if p.cl != nil && node == "" {
		node = p.cl.KeylessNode(uint64(i))
	}
	c.reply = p.loginReply(raw, node)
	if c.reply[0] != '+' {
		return c
	}
	c.login = p.logins.Add(string(user), string(pass))
	if key.node != "" || p.cl == nil {
		key.login = c.login
		_, err := p.pool(key).Conn(i)
		c.dialed = &dialResult{key: key, err: err}
	}
	return c
}

// loginReply is Valkey's answer to the client's own AUTH or HELLO ... AUTH
// (raw, sent as the client sent it, so MONITOR shows it as Valkey would),
// as the client would get it for AUTH: +OK, or its error (WRONGPASS, ...).
func (p *Proxy) loginReply(raw []byte, node string) []byte {
	nc, _, err := p.connect(upstream.State{Proto: 2, Bare: true, Node: node})
	if err != nil {
		return resp.AppendError(nil, p.dialErrorText(err))
	}
	reply, err := p.shoot(nc, raw)
	switch {
	case err != nil:
		return resp.AppendError(nil, p.dialErrorText(err))
	case reply == nil:
		return resp.AppendError(nil, p.dialErrorText(io.EOF))
	case reply[0] == '-':
		return reply
	}
	return resp.AppendSimple(nil, "OK")
}
