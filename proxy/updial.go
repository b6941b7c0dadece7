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
)

// dial connects to Valkey and replays st on the new connection.
func (p *Proxy) dial(st connState, owner *session) (*upConn, error) {
	nc, addr, err := p.connect(st)
	if err != nil {
		return nil, err
	}
	return p.startUp(nc, addr, owner, nil), nil
}

// startUp makes an upConn of a connection connect set up, and starts its
// reader and writer: an event loop reads a shared connection, a goroutine
// of its own any other.
func (p *Proxy) startUp(nc net.Conn, addr string, owner *session, relay func([]byte)) *upConn {
	c := &upConn{
		h:     &p.up,
		nc:    nc,
		addr:  addr,
		relay: relay,
		wake:  make(chan struct{}, 1),
		quit:  make(chan struct{}),
	}
	if owner != nil {
		c.owner = owner // never a nil *session in the interface
		c.unstream = make(chan struct{}, 1)
	}
	if c.dw.init(nc) {
		c.raw = c.dw.rc
	}
	if owner == nil && relay == nil && c.raw != nil {
		if lp := p.upstreamLoop(); lp != nil && lp.addUp(c) {
			p.wg.Add(1)
			go c.writeLoop()
			return c
		}
	}
	p.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
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
		case isTimeout(err):
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
