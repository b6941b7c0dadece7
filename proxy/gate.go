package proxy

import (
	"strings"

	"github.com/lockproxy/lockproxy/config"
	"github.com/lockproxy/lockproxy/resp"
)

// The gate of the commands that reconfigure Valkey (admin_commands): a
// plain command the command table calls gated (commands.Table.Gated: ACL
// SETUSER, CONFIG SET, REPLICAOF, CLUSTER DELSLOTS, ...) is refused
// before it is forwarded, unless the session may run it; a script's
// calls are gated by the monitor (rewrite/gate.go), which asks the same
// of the session (MayReconfigure). What lockproxy answers itself (the
// cluster face's CLUSTER answers, CLIENT LIST, KILL and NO-EVICT) never
// reaches Valkey and is not gated; neither are the proxy's own upstream
// connections (CLUSTER SLOTS, COMMAND, its scripts).

// adminCmdsCode is admin_commands as Proxy.adminCmds holds it.
func adminCmdsCode(m config.AdminCommands) int32 {
	switch m {
	case config.AdminCommandsRefuse:
		return 1
	case config.AdminCommandsForward:
		return 2
	}
	return 0
}

// MayReconfigure reports whether the session's client may run the
// commands that reconfigure Valkey: everybody under forward, nobody under
// refuse, under admin a connection logged in as an admin with role
// operate (admin.MayReconfigure: a loopback listener opens nothing).
// rewrite.GateSession.
func (s *session) MayReconfigure() bool {
	switch s.p.adminCmds.Load() {
	case 2:
		return true
	case 1:
		return false
	}
	return s.p.ops.admin.MayReconfigure(s.id)
}

// gated refuses a plain command that reconfigures Valkey when the
// session may not run it, and reports whether it did. In front of a
// cluster, the CLUSTER commands the cluster face answers pass (it never
// forwards one that changes the cluster). One map lookup for a command
// that is not gated.
func (s *session) gated(cmd resp.Command) bool {
	args := cmd.Args
	if !s.p.cmds().Gated(args) || s.MayReconfigure() {
		return false
	}
	if s.p.cl != nil && isClusterFaceCommand(args[0]) {
		return false
	}
	name := strings.ToUpper(string(args[0]))
	if s.p.cmds().Containers()[strings.ToLower(name)] && len(args) > 1 {
		name += " " + strings.ToUpper(string(args[1]))
	}
	msg := errGated(name, s.p.adminCmds.Load() == 1)
	if s.ded != nil && s.inMulti {
		// Refused while queued: EXEC aborts with EXECABORT, as for a
		// lock rule's refusal (lockplan.go).
		s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"),
			func([]byte) []byte { return resp.AppendError(nil, msg) }, nil)
		return true
	}
	s.local(resp.AppendError(nil, msg))
	return true
}
