package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/upstream"
)

// dial connects to Valkey and replays st on the new connection.
func (p *Proxy) dial(st connState, owner *session) (*upstream.Conn, error) {
	nc, addr, err := p.connect(st)
	if err != nil {
		return nil, err
	}
	return p.startUp(nc, addr, owner, nil), nil
}

// startUp makes a connection connect set up an upstream.Conn, and starts
// its reader and writer: an event loop reads a shared connection, a
// goroutine of its own any other.
func (p *Proxy) startUp(nc net.Conn, addr string, owner *session, relay func([]byte)) *upstream.Conn {
	var o upstream.Owner
	if owner != nil {
		o = owner // never a nil *session in the interface
	}
	c := upstream.New(&p.up, nc, addr, o, relay)
	if c.Loopable() {
		if lp := p.upstreamLoop(); lp != nil {
			lp.addUp(c)
		}
	}
	c.Start()
	return c
}

// connect opens a connection to Valkey (the primary now, with Sentinel) and
// replays st on it.
func (p *Proxy) connect(st connState) (net.Conn, string, error) {
	addr, err := p.upstreamAddr()
	if st.node != "" {
		addr, err = st.node, nil
	}
	if err != nil {
		return nil, "", err
	}
	nc, err := p.dialUpstream(context.Background(), addr)
	if err != nil {
		p.forgetMaster()
		return nil, "", &nodeError{addr, err}
	}
	// Connected: Valkey is there. Its answers may wait behind a long
	// command (SAVE, DEBUG SLEEP), so they get as long as any reply.
	_ = nc.SetDeadline(time.Now().Add(max(p.opts.Upstream.DialTimeout.D(), p.opts.Upstream.ReplyTimeout.D())))
	err = handshake(nc, st, &p.own)
	if err == nil && !st.bare {
		err = p.learnEpoch(nc, st.db)
	}
	if err != nil {
		nc.Close()
		var re *replyError
		switch {
		case errors.As(err, &re):
		case p.upstreamTLS() == nil && p.speaksTLS(addr):
			err = errPlaintextToTLS(addr)
		case upstream.IsTimeout(err):
			err = &slowError{wait: max(p.opts.Upstream.DialTimeout.D(), p.opts.Upstream.ReplyTimeout.D())}
		}
		return nil, "", &nodeError{addr, err}
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, addr, nil
}

// handshake sends the commands that make a new connection equal to the
// session state, all in one write, and checks their replies.
func handshake(nc net.Conn, st connState, own *ownLines) error {
	var cmds [][]string
	optional := map[int]bool{} // replies whose errors do not matter
	// A client's own login comes last: the connection is set up as the
	// proxy, and the user then keeps its database, name and library
	// info, as a client's connection keeps them across AUTH on Valkey,
	// whether or not the user may run SELECT or CLIENT SETNAME itself.
	user, pass, auth := st.username, st.password, st.auth
	if st.login {
		user, pass, auth = st.proxyUser, st.proxyPass, st.proxyPass != ""
	}
	switch {
	case st.proto == 3 && auth:
		cmds = append(cmds, []string{"HELLO", "3", "AUTH", userOrDefault(user), pass})
	case st.proto == 3:
		cmds = append(cmds, []string{"HELLO", "3"})
	case auth && user != "":
		cmds = append(cmds, []string{"AUTH", user, pass})
	case auth:
		cmds = append(cmds, []string{"AUTH", pass})
	}
	if st.db != 0 {
		cmds = append(cmds, []string{"SELECT", fmt.Sprint(st.db)})
	}
	if st.name != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", st.name})
	}
	// CLIENT SETINFO came with Redis 7.2: older servers refuse it, which
	// changes nothing for the client, so its errors are ignored.
	if st.libName != "" {
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"CLIENT", "SETINFO", "LIB-NAME", st.libName})
	}
	if st.libVer != "" {
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"CLIENT", "SETINFO", "LIB-VER", st.libVer})
	}
	// Load lockproxy's own scripts, so its EVALSHAs find them; a user not
	// allowed to (ACL) still gets them by EVAL on NOSCRIPT.
	for _, sc := range rewrite.Scripts {
		if st.bare {
			break
		}
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"SCRIPT", "LOAD", sc.Body})
	}
	switch {
	case st.login && st.username != "":
		cmds = append(cmds, []string{"AUTH", st.username, st.password})
	case st.login:
		cmds = append(cmds, []string{"AUTH", st.password})
	}
	if len(st.tracking) > 0 {
		cmds = append(cmds, st.tracking)
	}
	idAt := -1
	if st.clientID != nil {
		idAt = len(cmds)
		cmds = append(cmds, []string{"CLIENT", "ID"})
	}
	if len(cmds) == 0 {
		return nil
	}
	var out []byte
	for _, c := range cmds {
		out = resp.AppendCommandStrings(out, c...)
	}
	settled := own.handshake(nc, len(cmds))
	if _, err := nc.Write(out); err != nil {
		return err
	}
	defer settled()
	buf := make([]byte, 0, 4096)
	for i := range cmds {
		var n int
		var err error
		if buf, n, err = readReply(nc, buf); err != nil {
			return err
		}
		if buf[0] == '-' && !optional[i] {
			return &replyError{msg: string(bytes.TrimRight(buf[1:n], "\r\n"))}
		}
		if i == idAt && buf[0] == ':' {
			*st.clientID, _ = strconv.ParseInt(string(buf[1:n-2]), 10, 64)
		}
		buf = append(buf[:0], buf[n:]...)
	}
	return nil
}

// readReply reads from nc into buf until buf starts with a whole reply, and
// returns buf (grown as needed) and that reply's length. A blocking read: only
// for connections no reader goroutine or loop serves yet.
func readReply(nc net.Conn, buf []byte) ([]byte, int, error) {
	var f resp.Framer
	for {
		n, err := f.Frame(buf)
		if err != nil || n > 0 {
			return buf, n, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, max(len(buf), 4096))...)[:len(buf)]
		}
		m, err := nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && m == 0 {
			return buf, 0, err
		}
	}
}

func userOrDefault(u string) string {
	if u == "" {
		return "default"
	}
	return u
}

// connState is what a fresh upstream connection must be told before it can
// carry a session's commands.
type connState struct {
	proto              int
	db                 int
	username, password string
	auth               bool // log in with username/password
	name               string
	libName, libVer    string
	// bare: no lockproxy scripts (a one-off connection for a command that
	// must run while Valkey is busy, when SCRIPT LOAD would be refused).
	bare bool
	node string // in a cluster: the node to connect to
	// login: username and password are a client's own login, given last,
	// once the proxy's credentials (proxyUser, proxyPass) set the
	// connection up (handshake).
	login                bool
	proxyUser, proxyPass string
	// clientID, when set, gets Valkey's id of the connection (CLIENT ID,
	// asked last).
	clientID *int64
	// tracking: CLIENT TRACKING ON and its options, as this connection
	// must track for its session (tracking.go).
	tracking []string
}

// replyError is an error reply Valkey gave during the handshake (for example
// "ERR DB index is out of range"); the client gets it as it is.
type replyError struct{ msg string }

func (e *replyError) Error() string { return e.msg }

// slowError: Valkey accepted the connection but did not answer its
// handshake in time; it is alive, and busy.
type slowError struct{ wait time.Duration }

func (e *slowError) Error() string {
	return fmt.Sprintf("connected, but no answer within %s", e.wait)
}

// nodeError is a failed connect to Valkey with the address it was to: in
// front of a cluster, the node the command's slot led to, which the client's
// error must name (the configured upstream is only where the map came from).
type nodeError struct {
	addr string
	err  error
}

func (e *nodeError) Error() string { return e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }
