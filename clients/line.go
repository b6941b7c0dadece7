package clients

import (
	"strconv"
	"time"
)

// Conn is what CLIENT LIST shows of a client's connection itself, read
// when the line is written.
type Conn struct {
	ID          uint64
	Addr, Laddr string
	Fd          int
	Since       time.Time // connected
	LastActive  time.Time // its last command
	Blocked     bool      // waiting in a blocking command
	Omem        int       // output the proxy holds for it
	Cmd         string    // its last command (Intern), "NULL" before any
}

// AppendLine appends one line of CLIENT LIST, in Valkey 8's fields and
// order, for a client whose state is sn and connection c, at now. What the
// proxy does not track per client (query buffer, memory, network totals)
// reads 0.
func AppendLine(b []byte, sn *Snap, c Conn, now time.Time) []byte {
	age := int64(now.Sub(c.Since).Seconds())
	idle := max(int64(now.Sub(c.LastActive).Seconds()), 0)
	b = append(b, "id="...)
	b = strconv.AppendUint(b, c.ID, 10)
	b = append(b, " addr="...)
	b = append(b, c.Addr...)
	b = append(b, " laddr="...)
	b = append(b, c.Laddr...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(c.Fd), 10)
	b = append(b, " name="...)
	b = append(b, sn.Name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, age, 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, idle, 10)
	b = append(b, " flags="...)
	b = AppendFlags(b, sn.Flags, c.Blocked)
	b = append(b, " db="...)
	b = strconv.AppendInt(b, int64(sn.DB), 10)
	b = append(b, " sub="...)
	b = strconv.AppendInt(b, int64(sn.Sub), 10)
	b = append(b, " psub="...)
	b = strconv.AppendInt(b, int64(sn.PSub), 10)
	b = append(b, " ssub="...)
	b = strconv.AppendInt(b, int64(sn.SSub), 10)
	b = append(b, " multi="...)
	b = strconv.AppendInt(b, int64(sn.Multi), 10)
	b = append(b, " watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem="...)
	b = strconv.AppendInt(b, int64(c.Omem), 10)
	b = append(b, " tot-mem=0 events=r cmd="...)
	b = append(b, c.Cmd...)
	b = append(b, " user="...)
	b = append(b, sn.User...)
	b = append(b, " redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(sn.Proto), 10)
	b = append(b, " lib-name="...)
	b = append(b, sn.LibName...)
	b = append(b, " lib-ver="...)
	b = append(b, sn.LibVer...)
	b = append(b, " tot-net-in=0 tot-net-out=0 tot-cmds=0\n"...)
	return b
}

// AppendFlags appends CLIENT LIST's flags: the published ones, with b for
// a blocked client in Valkey's place for it (after S, O, P and x).
func AppendFlags(b []byte, flags string, blocked bool) []byte {
	if !blocked {
		return append(b, flags...)
	}
	if flags == "N" {
		return append(b, 'b')
	}
	i := 0
	for i < len(flags) && (flags[i] == 'S' || flags[i] == 'O' || flags[i] == 'P' || flags[i] == 'x') {
		i++
	}
	b = append(b, flags[:i]...)
	b = append(b, 'b')
	return append(b, flags[i:]...)
}
