package upstream

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// Handshake sends the commands that make a new connection equal to st, all
// in one write, and checks their replies: an error reply is a *ReplyError.
// scripts are loaded unless st.Bare (SCRIPT LOAD, errors ignored: a user
// the ACL does not allow gets them by EVAL on NOSCRIPT). record is told of
// the commands before they are written, and its done called once their
// replies are read (the proxy keeps its own commands out of MONITOR).
func Handshake(nc net.Conn, st State, scripts []string, record func(nc net.Conn, n int) (done func())) error {
	var cmds [][]string
	optional := map[int]bool{} // replies whose errors do not matter
	// A client's own login comes last: the connection is set up as the
	// proxy, and the user then keeps its database, name and library
	// info, as a client's connection keeps them across AUTH on Valkey,
	// whether or not the user may run SELECT or CLIENT SETNAME itself.
	user, pass, auth := st.Username, st.Password, st.Auth
	if st.Login {
		user, pass, auth = st.ProxyUser, st.ProxyPass, st.ProxyPass != ""
	}
	switch {
	case st.Proto == 3 && auth:
		cmds = append(cmds, []string{"HELLO", "3", "AUTH", UserOrDefault(user), pass})
	case st.Proto == 3:
		cmds = append(cmds, []string{"HELLO", "3"})
	case auth && user != "":
		cmds = append(cmds, []string{"AUTH", user, pass})
	case auth:
		cmds = append(cmds, []string{"AUTH", pass})
	}
	if st.DB != 0 {
		cmds = append(cmds, []string{"SELECT", fmt.Sprint(st.DB)})
	}
	if st.Name != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", st.Name})
	}
	// CLIENT SETINFO came with Redis 7.2: older servers refuse it, which
	// changes nothing for the client, so its errors are ignored.
	if st.LibName != "" {
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"CLIENT", "SETINFO", "LIB-NAME", st.LibName})
	}
	if st.LibVer != "" {
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"CLIENT", "SETINFO", "LIB-VER", st.LibVer})
	}
	// Load lockproxy's own scripts, so its EVALSHAs find them; a user not
	// allowed to (ACL) still gets them by EVAL on NOSCRIPT.
	for _, body := range scripts {
		if st.Bare {
			break
		}
		optional[len(cmds)] = true
		cmds = append(cmds, []string{"SCRIPT", "LOAD", body})
	}
	switch {
	case st.Login && st.Username != "":
		cmds = append(cmds, []string{"AUTH", st.Username, st.Password})
	case st.Login:
		cmds = append(cmds, []string{"AUTH", st.Password})
	}
	if len(st.Tracking) > 0 {
		cmds = append(cmds, st.Tracking)
	}
	idAt := -1
	if st.ClientID != nil {
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
	settled := record(nc, len(cmds))
	if _, err := nc.Write(out); err != nil {
		return err
	}
	defer settled()
	buf := make([]byte, 0, 4096)
	for i := range cmds {
		var n int
		var err error
		if buf, n, err = ReadReply(nc, buf); err != nil {
			return err
		}
		if buf[0] == '-' && !optional[i] {
			return &ReplyError{Msg: string(bytes.TrimRight(buf[1:n], "\r\n"))}
		}
		if i == idAt && buf[0] == ':' {
			*st.ClientID, _ = strconv.ParseInt(string(buf[1:n-2]), 10, 64)
		}
		buf = append(buf[:0], buf[n:]...)
	}
	return nil
}

// ReadReply reads from nc into buf until buf starts with a whole reply, and
// returns buf (grown as needed) and that reply's length. A blocking read: only
// for connections no reader goroutine or loop serves yet.
func ReadReply(nc net.Conn, buf []byte) ([]byte, int, error) {
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

// UserOrDefault is the user a login without a name logs in as.
func UserOrDefault(u string) string {
	if u == "" {
		return "default"
	}
	return u
}

// State is what a fresh connection must be told before it can carry a
// session's commands (Handshake).
type State struct {
	Proto              int
	DB                 int
	Username, Password string
	Auth               bool // log in with Username/Password
	Name               string
	LibName, LibVer    string
	// Bare: no lockproxy scripts (a one-off connection for a command that
	// must run while Valkey is busy, when SCRIPT LOAD would be refused).
	Bare bool
	Node string // in a cluster: the node to connect to
	// Login: Username and Password are a client's own login, given last,
	// once the proxy's credentials (ProxyUser, ProxyPass) set the
	// connection up.
	Login                bool
	ProxyUser, ProxyPass string
	// ClientID, when set, gets Valkey's id of the connection (CLIENT ID,
	// asked last).
	ClientID *int64
	// Tracking: CLIENT TRACKING ON and its options, as this connection
	// must track for its session.
	Tracking []string
}

// ReplyError is an error reply Valkey gave during the handshake (for example
// "ERR DB index is out of range"); the client gets it as it is.
type ReplyError struct{ Msg string }

func (e *ReplyError) Error() string { return e.Msg }

// SlowError: Valkey accepted the connection but did not answer its
// handshake within Wait, the setting that bounds it (Setting); it may be
// busy, or hung.
type SlowError struct {
	Wait    time.Duration
	Setting string
}

func (e *SlowError) Error() string {
	return fmt.Sprintf("connected, but no answer within %s (%s)", e.Wait, e.Setting)
}

// NodeError is a failed connect to Valkey with the address it was to: in
// front of a cluster, the node the command's slot led to, which the client's
// error must name (the configured upstream is only where the map came from).
type NodeError struct {
	Addr string
	Err  error
}

func (e *NodeError) Error() string { return e.Err.Error() }
func (e *NodeError) Unwrap() error { return e.Err }

// RoundTrip sends cmds in one write on nc, a connection no reader serves,
// and reads one reply each (the replies share one buffer), within the
// deadline nc has.
func RoundTrip(nc net.Conn, cmds [][]string) ([][]byte, error) {
	var out []byte
	for _, c := range cmds {
		out = resp.AppendCommandStrings(out, c...)
	}
	if _, err := nc.Write(out); err != nil {
		return nil, err
	}
	var (
		f       resp.Framer
		replies = make([][]byte, 0, len(cmds))
		buf     = make([]byte, 0, 4096)
		at      int
	)
	for len(replies) < len(cmds) {
		n, err := f.Frame(buf[at:])
		if err != nil {
			return nil, err
		}
		if n > 0 {
			replies = append(replies, buf[at:at+n])
			at += n
			f = resp.Framer{}
			continue
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, max(len(buf), 4096))...)[:len(buf)]
			// The replies so far point into the old array: they stay
			// valid (it is not written again).
		}
		m, err := nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && m == 0 {
			return nil, err
		}
	}
	return replies, nil
}
