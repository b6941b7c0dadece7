package proxy

import (
	"net"
	"sort"
	"time"

	"github.com/lockproxy/lockproxy/clients"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// CLIENT ID, INFO, LIST and KILL answer about the proxy's own clients, in
// Valkey's format: a client's id is its session id, its fields are its own
// connection state (clientState), and CLIENT KILL closes sessions of the
// proxy (package clients: the lines, filters and kills; a session is seen
// there as a clients.Client, clientview.go). Valkey's view would be of the
// proxy's upstream connections, which serve many clients at once: killing
// one would cut every client on it, and its name, database and last
// command are another client's.

// publish makes the session's state readable by CLIENT LIST in other
// sessions.
func (s *session) publish() {
	sn := &clients.Snap{
		DB: s.db, Proto: s.proto, Name: s.name,
		LibName: s.libName, LibVer: s.libVer, User: s.user(), Multi: -1,
		Replica: s.replica,
	}
	pubsub := s.subscribed()
	if pubsub {
		sn.Sub, sn.PSub, sn.SSub = s.subs.Counts()
	}
	if s.inMulti {
		sn.Multi = len(s.multiShape)
		if s.multiDur != nil {
			sn.Multi -= s.multiDur.Hidden // lockproxy's own (package locks)
		}
	}
	sn.Flags = clients.Flags(clients.FlagState{Replica: s.replica, Monitor: s.monitor,
		PubSub: pubsub, Multi: s.inMulti, NoEvict: s.noEvict, NoTouch: s.noTouch})
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
	s.lastCmd.Store(clients.Intern(args, s.p.cmds().containers))
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

// clientList answers CLIENT LIST [TYPE type] [ID id ...] and CLIENT INFO.
func (s *session) clientList(args [][]byte) {
	s.publish()
	now := time.Now()
	if resp.EqualFold(args[1], "info") {
		s.local(appendInfo(nil, clients.Line(nil, clientView{s}, now), s.proto))
		return
	}
	text, errText := clients.List(args[2:], s.p.clientViews(), now)
	if errText != "" {
		s.local(resp.AppendError(nil, errText))
		return
	}
	s.local(appendInfo(nil, text, s.proto))
}

// clientKill answers CLIENT KILL (clients.Kill). It reports false when the
// caller itself is to be closed, after its reply.
func (s *session) clientKill(args [][]byte) bool {
	s.publish()
	reply, keep := clients.Kill(args[2:], clientView{s}, s.p.clientViews(), s.aclUserKnown, time.Now())
	if reply != nil {
		s.local(reply)
	}
	return keep
}

// aclUserKnown asks Valkey whether it knows the ACL user name (CLIENT
// KILL USER); asked is true when the command is handled again with
// Valkey's answer (askAside).
func (s *session) aclUserKnown(name []byte) (known, asked bool) {
	reply := s.askAside(resp.Command{Raw: resp.AppendCommand(nil, []byte("ACL"), []byte("GETUSER"), name)})
	if reply == nil {
		return false, true
	}
	return !(reply[0] == '_' || string(reply) == "$-1\r\n" || string(reply) == "*-1\r\n"), false
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
		if e := clients.NameError(args[2]); e != "" {
			s.local(resp.AppendError(nil, e))
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
		switch lib, e := clients.SetInfo(args[2], args[3]); lib {
		case "lib-name":
			s.libName = string(args[3])
		case "lib-ver":
			s.libVer = string(args[3])
		default:
			s.local(resp.AppendError(nil, e))
			return true, true
		}
		s.local(resp.AppendSimple(nil, "OK"))
	default:
		return false, true
	}
	return true, true
}
