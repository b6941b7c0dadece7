package proxy

import (
	"github.com/lockproxy/lockproxy/locks"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// refuseTyped answers a refusal of a command that works on one data type
// (LPOP, HDEL, ...) through rewrite.TypeGate, in Valkey: WRONGTYPE, as
// Valkey answers, when a key holds a type the command cannot work on; the
// refusal otherwise, recorded as any. It reports false, leaving the refusal
// to the caller, for other commands, inside MULTI (a refusal there must
// abort the transaction at EXEC, as today) and in subscribe or MONITOR mode.
func (s *session) refuseTyped(cmd resp.Command, d *rewrite.Decider, plan rewrite.Plan) bool {
	if s.ded != nil && (s.inMulti || s.ded.Streaming()) {
		return false
	}
	keys, types, ok := d.TypeCheck(cmd.Args)
	if !ok {
		return false
	}
	if s.p.cl != nil && !s.routeScript(keys) {
		return true
	}
	s.forward(locks.TypeGateCommand(keys, types), s.p.locks.TypeGateHook(s, plan.Effects, plan.Err))
	return true
}
