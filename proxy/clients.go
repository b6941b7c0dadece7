package proxy

import (
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeynum"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// CLIENT ID, INFO, LIST and KILL answer about the proxy's own clients, in
// Valkey's format: a client's id is its session id, its fields are its own
// connection state (clientState), and CLIENT KILL closes sessions of the
// proxy. Valkey's view would be of the proxy's upstream connections, which
// serve many clients at once: killing one would cut every client on it, and
// its name, database and last command are another client's.

// clientSnap is what CLIENT LIST shows of a session and other sessions may
// read: published by the session whenever its state may have changed.
type clientSnap struct {
	db, proto       int
	name            string
	libName, libVer string
	user            string
	flags           string
	multi           int
	sub, psub, ssub int // subscriptions: channels, patterns, shard channels
	replica         bool
}

// publish makes the session's state readable by CLIENT LIST in other
// sessions.
func (s *session) publish() {
	sn := &clientSnap{
		db: s.db, proto: s.proto, name: s.name,
		libName: s.libName, libVer: s.libVer, user: s.user(), multi: -1,
	}
	var f []byte
	if s.replica {
		f = append(f, 'S')
	}
	if s.monitor {
		f = append(f, 'O')
	}
	if s.subscribed() {
		f = append(f, 'P')
		sn.sub, sn.psub, sn.ssub = s.subs.counts()
	}
	if s.inMulti {
		f = append(f, 'x')
		sn.multi = len(s.multiShape)
		if s.multiDur != nil {
			sn.multi -= s.multiDur.hidden // lockproxy's own (durable_multi.go)
		}
	}
	if s.noEvict {
		f = append(f, 'e')
	}
	if s.noTouch {
		f = append(f, 'T')
	}
	if len(f) == 0 {
		f = append(f, 'N')
	}
	sn.flags, sn.replica = string(f), s.replica
	s.snap.Store(sn)
}

// user is the user Valkey knows the session as.
func (s *session) user() string {
	if s.loginUser != "" {
		return s.loginUser
	}
	return upstream.UserOrDefault(s.p.opts.Upstream.Username)
}

// noteCommand records the command being handled for CLIENT LIST's cmd.
func (s *session) noteCommand(args [][]byte) {
	s.lastCmd.Store(internCmd(args, s.p.cmds().containers))
}

// internCmd is a command's full name as Valkey shows it (client|list for a
// subcommand), shared by every session that sends it; names never seen in
// Valkey's command set are not kept (at most maxInterned). containers are the
// commands whose name includes the subcommand.
func internCmd(args [][]byte, containers map[string]bool) *string {
	var buf [48]byte
	name, ok := lower(buf[:24], args[0])
	if !ok {
		return &unknownCmd
	}
	if len(args) > 1 && containers[string(name)] {
		if sub, ok := lower(buf[len(name)+1:], args[1]); ok {
			buf[len(name)] = '|'
			name = buf[:len(name)+1+len(sub)]
		}
	}
	if v, ok := interned.Load(string(name)); ok {
		return v.(*string)
	}
	if internedN.Add(1) > maxInterned {
		return &unknownCmd
	}
	n := string(name)
	v, _ := interned.LoadOrStore(n, &n)
	return v.(*string)
}

var (
	interned   sync.Map
	internedN  atomic.Int64
	unknownCmd = "NULL"
)

const maxInterned = 4096

// clientInfoLine is one line of CLIENT LIST, in Valkey 8's fields and order.
// What the proxy does not track per client (query buffer, memory, network
// totals) reads 0; omem is the output the proxy holds for the client.
func (s *session) clientInfoLine(b []byte, now time.Time) []byte {
	sn := s.snap.Load()
	cmd := "NULL"
	if c := s.lastCmd.Load(); c != nil {
		cmd = *c
	}
	s.outMu.Lock()
	omem := s.out.Len() + s.writing
	s.outMu.Unlock()
	age := int64(now.Sub(s.since).Seconds())
	idle := max(int64(now.Sub(time.Unix(0, s.lastActive.Load())).Seconds()), 0)
	b = append(b, "id="...)
	b = strconv.AppendUint(b, s.id, 10)
	b = append(b, " addr="...)
	b = append(b, s.addr...)
	b = append(b, " laddr="...)
	b = append(b, s.laddr...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(s.sockFd), 10)
	b = append(b, " name="...)
	b = append(b, sn.name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, age, 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, idle, 10)
	b = append(b, " flags="...)
	b = appendFlags(b, sn.flags, s.blocked.Load())
	b = append(b, " db="...)
	b = strconv.AppendInt(b, int64(sn.db), 10)
	b = append(b, " sub="...)
	b = strconv.AppendInt(b, int64(sn.sub), 10)
	b = append(b, " psub="...)
	b = strconv.AppendInt(b, int64(sn.psub), 10)
	b = append(b, " ssub="...)
	b = strconv.AppendInt(b, int64(sn.ssub), 10)
	b = append(b, " multi="...)
	b = strconv.AppendInt(b, int64(sn.multi), 10)
	b = append(b, " watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem="...)
	b = strconv.AppendInt(b, int64(omem), 10)
	b = append(b, " tot-mem=0 events=r cmd="...)
	b = append(b, cmd...)
	b = append(b, " user="...)
	b = append(b, sn.user...)
	b = append(b, " redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(sn.proto), 10)
	b = append(b, " lib-name="...)
	b = append(b, sn.libName...)
	b = append(b, " lib-ver="...)
	b = append(b, sn.libVer...)
	b = append(b, " tot-net-in=0 tot-net-out=0 tot-cmds=0\n"...)
	return b
}

// appendFlags appends CLIENT LIST's flags: the published ones, with b for a
// blocked client in Valkey's place for it (after S, O, P and x).
func appendFlags(b []byte, flags string, blocked bool) []byte {
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

// allSessions returns the proxy's sessions in id order.
func (p *Proxy) allSessions() []*session {
	p.mu.Lock()
	list := make([]*session, 0, len(p.sessions))
	for x := range p.sessions {
		list = append(list, x)
	}
	p.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	return list
}

// clientType is a session's type for CLIENT LIST TYPE and CLIENT KILL TYPE.
func clientType(sn *clientSnap) string {
	switch {
	case sn.replica:
		return "replica"
	case sn.sub+sn.psub+sn.ssub > 0:
		return "pubsub"
	}
	return "normal"
}

// validClientType reports whether Valkey knows t as a client type.
func validClientType(t []byte) bool {
	for _, k := range []string{"normal", "master", "primary", "replica", "slave", "pubsub"} {
		if resp.EqualFold(t, k) {
			return true
		}
	}
	return false
}

func sameType(sn *clientSnap, t []byte) bool {
	switch ct := clientType(sn); {
	case resp.EqualFold(t, ct):
		return true
	case ct == "replica":
		return resp.EqualFold(t, "slave")
	}
	return false
}

// clientList answers CLIENT LIST [TYPE type] [ID id ...] and CLIENT INFO.
func (s *session) clientList(args [][]byte) {
	s.publish()
	now := time.Now()
	if resp.EqualFold(args[1], "info") {
		s.local(appendInfo(nil, s.clientInfoLine(nil, now), s.proto))
		return
	}
	var typ []byte
	var ids map[uint64]bool
	for i := 2; i < len(args); {
		switch {
		case resp.EqualFold(args[i], "type") && i+1 < len(args):
			if !validClientType(args[i+1]) {
				s.local(resp.AppendError(nil, errClientType(string(args[i+1]))))
				return
			}
			typ = args[i+1]
			i += 2
		case resp.EqualFold(args[i], "id") && i+1 < len(args):
			ids = map[uint64]bool{}
			for i++; i < len(args); i++ {
				n, ok := valkeynum.String2ll(args[i])
				if !ok || n <= 0 {
					s.local(resp.AppendError(nil, errClientID))
					return
				}
				ids[uint64(n)] = true
			}
		default:
			s.local(resp.AppendError(nil, errSyntax))
			return
		}
	}
	var out []byte
	for _, x := range s.p.allSessions() {
		sn := x.snap.Load()
		if (typ != nil && !sameType(sn, typ)) || (ids != nil && !ids[x.id]) {
			continue
		}
		out = x.clientInfoLine(out, now)
	}
	s.local(appendInfo(nil, out, s.proto))
}

// clientKill answers CLIENT KILL addr:port (+OK, or an error when no
// client has that address) and CLIENT KILL <filter> <value> ... (the
// number of clients closed; SKIPME yes by default). It reports false when
// the caller itself is to be closed, after its reply.
func (s *session) clientKill(args [][]byte) bool {
	s.publish()
	if len(args) == 3 {
		for _, x := range s.p.allSessions() {
			if x.addr == string(args[2]) {
				s.local(resp.AppendSimple(nil, "OK"))
				if x == s {
					return false
				}
				x.abort()
				return true
			}
		}
		s.local(resp.AppendError(nil, errNoSuchClient))
		return true
	}
	if len(args)%2 != 0 {
		s.local(resp.AppendError(nil, errSyntax))
		return true
	}
	var (
		id               uint64
		typ, user        []byte
		addr, laddr      string
		maxAge           int64
		skipMe           = true
		hasAddr, hasLad  bool
		hasUser, hasType bool
	)
	for i := 2; i < len(args); i += 2 {
		opt, v := args[i], args[i+1]
		switch {
		case resp.EqualFold(opt, "id"):
			n, ok := valkeynum.String2ll(v)
			if !ok || n <= 0 {
				s.local(resp.AppendError(nil, errClientIDKill))
				return true
			}
			id = uint64(n)
		case resp.EqualFold(opt, "type"):
			if !validClientType(v) {
				s.local(resp.AppendError(nil, errClientType(string(v))))
				return true
			}
			typ, hasType = v, true
		case resp.EqualFold(opt, "user"):
			user, hasUser = v, true
			if reply := s.askAside(resp.Command{Raw: resp.AppendCommand(nil, []byte("ACL"), []byte("GETUSER"), v)}); reply == nil {
				return true // handled again with Valkey's answer (askAside)
			} else if reply[0] == '_' || string(reply) == "$-1\r\n" || string(reply) == "*-1\r\n" {
				s.local(resp.AppendError(nil, errNoSuchUser(string(v))))
				return true
			}
		case resp.EqualFold(opt, "addr"):
			addr, hasAddr = string(v), true
		case resp.EqualFold(opt, "laddr"):
			laddr, hasLad = string(v), true
		case resp.EqualFold(opt, "skipme"):
			switch {
			case resp.EqualFold(v, "yes"):
				skipMe = true
			case resp.EqualFold(v, "no"):
				skipMe = false
			default:
				s.local(resp.AppendError(nil, errSyntax))
				return true
			}
		case resp.EqualFold(opt, "maxage"):
			n, ok := valkeynum.String2ll(v)
			if !ok {
				s.local(resp.AppendError(nil, errMaxAge))
				return true
			}
			if n <= 0 {
				s.local(resp.AppendError(nil, errMaxAgeRange))
				return true
			}
			maxAge = n
		default:
			s.local(resp.AppendError(nil, errSyntax))
			return true
		}
	}
	now := time.Now()
	killed, self := 0, false
	for _, x := range s.p.allSessions() {
		sn := x.snap.Load()
		switch {
		case id != 0 && x.id != id,
			hasType && !sameType(sn, typ),
			hasUser && sn.user != string(user),
			hasAddr && x.addr != addr,
			hasLad && x.laddr != laddr,
			maxAge > 0 && int64(now.Sub(x.since).Seconds()) < maxAge,
			skipMe && x == s:
			continue
		}
		killed++
		if x == s {
			self = true
			continue
		}
		x.abort()
	}
	s.local(resp.AppendInt(nil, int64(killed)))
	return !self
}

func localAddr(nc net.Conn) string {
	if a := nc.LocalAddr(); a != nil {
		return a.String()
	}
	return ""
}

// clientSelf answers the CLIENT subcommands that are about the client
// itself, on shared and dedicated connections alike. handled is false for
// the others; keep is false when the session must end (it killed itself).
func (s *session) clientSelf(args [][]byte) (handled, keep bool) {
	if len(args) < 2 {
		return false, true
	}
	sub := args[1]
	switch {
	case resp.EqualFold(sub, "id") && len(args) == 2:
		s.local(resp.AppendInt(nil, int64(s.id)))
	case resp.EqualFold(sub, "info") && len(args) == 2, resp.EqualFold(sub, "list"):
		s.clientList(args)
	case resp.EqualFold(sub, "kill") && len(args) >= 3:
		return true, s.clientKill(args)
	case (resp.EqualFold(sub, "no-evict") || resp.EqualFold(sub, "no-touch")) && len(args) == 3:
		var on bool
		switch {
		case resp.EqualFold(args[2], "on"):
			on = true
		case resp.EqualFold(args[2], "off"):
		default:
			s.local(resp.AppendError(nil, errSyntax))
			return true, true
		}
		if resp.EqualFold(sub, "no-evict") {
			s.noEvict = on
			s.local(resp.AppendSimple(nil, "OK"))
			break
		}
		if !on && s.ded == nil {
			s.noTouch = false
			s.local(resp.AppendSimple(nil, "OK"))
			break
		}
		// Valkey leaves the keys a no-touch connection reads untouched:
		// that takes the session's own connection (client moves it
		// there first), where Valkey keeps the flag.
		if s.ded == nil {
			return false, true
		}
		if s.askDedicated(resp.AppendCommand(nil, args...)) {
			s.noTouch = on
		}
	case resp.EqualFold(sub, "setname") && len(args) == 3:
		if !validName(args[2]) {
			s.local(resp.AppendError(nil, errClientName))
			return true, true
		}
		s.setName(string(args[2]))
		s.local(resp.AppendSimple(nil, "OK"))
	case resp.EqualFold(sub, "getname") && len(args) == 2:
		if s.name == "" {
			s.local(resp.AppendNull(nil, s.proto))
		} else {
			s.local(resp.AppendBulk(nil, []byte(s.name)))
		}
	case resp.EqualFold(sub, "setinfo") && len(args) == 4:
		v := args[3]
		switch {
		case resp.EqualFold(args[2], "lib-name"):
			if !validName(v) {
				s.local(resp.AppendError(nil, errSetinfoValue("lib-name")))
				return true, true
			}
			s.libName = string(v)
		case resp.EqualFold(args[2], "lib-ver"):
			if !validName(v) {
				s.local(resp.AppendError(nil, errSetinfoValue("lib-ver")))
				return true, true
			}
			s.libVer = string(v)
		default:
			s.local(resp.AppendError(nil, errSetinfoOption(string(args[2]))))
			return true, true
		}
		s.local(resp.AppendSimple(nil, "OK"))
	default:
		return false, true
	}
	return true, true
}
