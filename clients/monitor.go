package clients

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MONITOR and the proxy's own set-up commands. Every upstream connection the
// proxy opens is first told the client's state (SELECT, HELLO, AUTH,
// CLIENT SETNAME, SCRIPT LOAD, CLIENT ID: handshake), and MONITOR would show
// those commands in the middle of the clients' own, for example between a
// client's MULTI and the command it sent before it, where Valkey shows none.
// While a client of the proxy monitors, the proxy remembers how many set-up
// commands each new connection is sent, by its address, and a MONITOR
// session of the proxy leaves out that many lines from that address. The
// last ownKeep connections are remembered, each for ownFor (memory stays
// bounded however many connections open; a line of one forgotten before
// MONITOR showed it is shown).

const (
	ownKeep = 256
	ownFor  = 10 * time.Second
)

// OwnLines is the proxy's record of connections in set-up. The zero value
// is empty and ready.
type OwnLines struct {
	monitors atomic.Int32 // sessions in MONITOR
	mu       sync.Mutex
	left     map[string]ownEntry // address -> set-up lines not yet seen by MONITOR
	order    []string            // addresses, oldest first, at most ownKeep
}

type ownEntry struct {
	n     int
	until time.Time
}

// Begin counts a client that starts to monitor.
func (o *OwnLines) Begin() { o.monitors.Add(1) }

// End counts a client that no longer monitors (RESET, or it ended).
func (o *OwnLines) End() { o.monitors.Add(-1) }

// Add records that n more set-up commands are sent on nc.
func (o *OwnLines) Add(nc net.Conn, n int) {
	if o.monitors.Load() == 0 {
		return
	}
	o.record(nc, n)
}

// Handshake records a new connection's n set-up commands whether or not
// a session monitors now: a MONITOR that begins before Valkey reads them
// shows them. It reports a func to call once their replies are read,
// which forgets them if no session monitored all along (Valkey read them
// before any MONITOR began).
func (o *OwnLines) Handshake(nc net.Conn, n int) (done func()) {
	quiet := o.monitors.Load() == 0
	o.record(nc, n)
	return func() {
		if quiet && o.monitors.Load() == 0 {
			o.forget(nc)
		}
	}
}

// forget drops what is recorded for nc.
func (o *OwnLines) forget(nc net.Conn) {
	a := nc.LocalAddr()
	if a == nil {
		return
	}
	o.mu.Lock()
	delete(o.left, a.String()) // its place in order goes with the oldest
	o.mu.Unlock()
}

// record is Add whether or not a session monitors.
func (o *OwnLines) record(nc net.Conn, n int) {
	a := nc.LocalAddr()
	if a == nil || n == 0 {
		return
	}
	addr := a.String()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.left == nil {
		o.left = map[string]ownEntry{}
	}
	if e, ok := o.left[addr]; ok {
		// More set-up on the same connection (the epoch's reads after the
		// handshake): its lines add up.
		o.left[addr] = ownEntry{n: e.n + n, until: time.Now().Add(ownFor)}
		return
	}
	if len(o.order) == ownKeep {
		delete(o.left, o.order[0])
		o.order = append(o.order[:0], o.order[1:]...)
	}
	o.left[addr] = ownEntry{n: n, until: time.Now().Add(ownFor)}
	o.order = append(o.order, addr)
}

// Drop reports whether a MONITOR line is one of the proxy's own set-up
// commands, counting it off.
func (o *OwnLines) Drop(line []byte) bool {
	// +<time> [<db> <addr>] "cmd" ...   (or [<db> lua] from a script)
	i := bytes.IndexByte(line, '[')
	if i < 0 || len(line) == 0 || line[0] != '+' {
		return false
	}
	j := bytes.IndexByte(line[i:], ']')
	sp := bytes.IndexByte(line[i:], ' ')
	if j < 0 || sp < 0 || sp > j {
		return false
	}
	addr := line[i+sp+1 : i+j]
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.left[string(addr)]
	switch {
	case !ok:
		return false
	case time.Now().After(e.until):
		delete(o.left, string(addr))
		return false
	case e.n <= 1:
		delete(o.left, string(addr))
	default:
		e.n--
		o.left[string(addr)] = e
	}
	return true
}
