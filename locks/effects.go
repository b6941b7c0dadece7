package locks

import (
	"bytes"
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/telemetry"
)

// Apply records what a command's reply meant to client c, in the
// counters and the audit: effects as Fold filled them in (or as decided,
// for commands forwarded or refused without a script). reply is the
// client's reply, nil for effects known before sending (refusals).
func (k *Keeper) Apply(c Client, effects []rewrite.Effect, reply []byte) {
	if len(reply) > 0 && reply[0] == '-' {
		if bytes.HasPrefix(reply, []byte("-STALE ")) {
			k.staleWrite(c, effects, reply)
			return
		}
		if !refusedBy(effects) {
			return // Valkey refused it: nothing changed
		}
	}
	k.noteGrants(c, effects)
	now := time.Now()
	p := k.host
	for i := range effects {
		e := &effects[i]
		// First what only counts: no event to build.
		switch e.Kind {
		case 0:
			continue // did not happen: another lock key of the command was refused
		case rewrite.Grant:
			if e.Grant == 0 {
				p.Contended(e, now)
			} else {
				p.Granted(e, now)
			}
			continue
		case rewrite.SetValue:
			continue
		case rewrite.FencedWrite:
			if !e.Unfenced || e.Rule == nil || e.Rule.Fencing.UnfencedWrites != policy.UnfencedObserve {
				continue // a write that passed its fence is not an intervention
			}
		}
		ev := telemetry.Event{Time: now, Client: c.Addr(), Name: c.Name(), Command: e.Command, Key: string(e.Key),
			Owner: e.Owner, Holder: e.Holder, Grant: e.Grant}
		if e.Rule != nil {
			ev.Rule = e.Rule.Pattern.String()
		}
		n, isInt := resp.ReplyInt(reply)
		switch e.Kind {
		case rewrite.Released:
			switch e.Outcome {
			case rewrite.OutcomeForwarded:
				ev.Outcome, ev.Detail = telemetry.OutcomeObserved, "forwarded unchecked"
				if e.Holder != "" {
					ev.Outcome = telemetry.OutcomeSuccessorDeleted
					ev.Detail = "deleted a lock granted to " + e.Holder
				}
			default:
				p.Released(e)
				ev.Outcome, ev.Token = telemetry.OutcomeRewritten, telemetry.MaskHead(e.Value, e.ValueLen)
				ev.Detail = releaseDetail(n)
				if e.Outcome == rewrite.OutcomeSuperseded && e.Holder != "" {
					ev.Outcome = telemetry.OutcomeSuccessorPrevented
					ev.Detail = "the lock is now " + e.Holder + "'s; not deleted"
				}
			}
		case rewrite.Renewed:
			ev.Outcome = telemetry.OutcomeRewritten
			ev.Detail = "token-checked lease change"
			if !e.Acted {
				ev.Detail = "token-checked lease change: no longer the holder, nothing changed"
			}
		case rewrite.Observed:
			ev.Outcome, ev.Detail = telemetry.OutcomeObserved, e.Reason
			if isInt && n > int64(e.Plain) && e.Holder != "" {
				ev.Outcome = telemetry.OutcomeSuccessorDeleted
				ev.Detail = "deleted a lock granted to " + e.Holder
			}
		case rewrite.Refused:
			ev.Outcome, ev.Detail = telemetry.OutcomeRefused, e.Reason
		case rewrite.Flushed:
			ev.Outcome = telemetry.OutcomeFlushed
		case rewrite.FencedWrite: // unfenced, under unfenced_writes: observe
			ev.Outcome, ev.Detail = telemetry.OutcomeObserved, "write to a guarded key without a grant of its lock"
		}
		p.Record(ev, e) // ring, log line, counters by rule and outcome, audit file
	}
}

// Accepted reports whether a reply says Valkey carried the command out
// (anything but an error).
func Accepted(reply []byte) bool {
	return len(reply) > 0 && reply[0] != '-' && reply[0] != '!'
}

// refusedBy reports whether a script refused the command (Fold turned one
// of its effects into Refused), as opposed to Valkey rejecting it.
func refusedBy(effects []rewrite.Effect) bool {
	for i := range effects {
		if effects[i].Kind == rewrite.Refused && effects[i].Reason != "" {
			return true
		}
	}
	return false
}

// releaseDetail is a rewritten release's event detail; the usual two are
// built once.
func releaseDetail(n int64) string {
	switch n {
	case 0:
		return releasedNone
	case 1:
		return releasedOne
	}
	return "token-checked release deleted " + strconv.FormatInt(n, 10) + " key(s)"
}

var releasedNone, releasedOne = "token-checked release deleted 0 key(s)", "token-checked release deleted 1 key(s)"

// staleWrite records a fenced write the fence refused.
func (k *Keeper) staleWrite(c Client, effects []rewrite.Effect, reply []byte) {
	for i := range effects {
		e := &effects[i]
		if e.Kind != rewrite.FencedWrite {
			continue
		}
		ev := telemetry.Event{Time: time.Now(), Client: c.Addr(), Name: c.Name(), Command: e.Command,
			Key: string(e.Key), Owner: e.Owner, Grant: staleToken(reply), Outcome: telemetry.OutcomeStaleRefused,
			Detail: string(bytes.TrimRight(reply[1:], "\r\n"))}
		if e.Rule != nil {
			ev.Rule = e.Rule.Pattern.String()
		}
		k.host.Record(ev, e)
		return
	}
}

// staleToken reads the refused token out of the Fenced script's STALE
// error ("... with fencing token 33: ..."): the script found it in the
// writer's record, so only the reply knows it.
func staleToken(reply []byte) int64 {
	_, rest, ok := bytes.Cut(reply, []byte("with fencing token "))
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(string(rest[:max(0, bytes.IndexByte(rest, ':'))]), 10, 64)
	return n
}

// Hooks: what the reply to a lock plan's command does, handed to the
// proxy to run when the reply comes (package upstream's Pend hooks).

// RunHook is the hook of a plan's script call (run by the proxy as
// EVALSHA, EVAL or FCALL): the reply folded to the command's own (Fold)
// and its effects recorded.
func (k *Keeper) RunHook(c Client, plan rewrite.Plan, proto int) func([]byte) []byte {
	effects, shape, sc := plan.Effects, plan.Shape, plan.Script
	return func(reply []byte) []byte {
		out := rewrite.Fold(shape, effects, sc.Unwrap(reply), proto)
		k.Apply(c, effects, out)
		return out
	}
}

// ForwardHook is the hook of a command forwarded as it came under a lock
// rule: its effects recorded, and learn (Plan.Learn, nil for none) told
// whether Valkey carried it out.
func (k *Keeper) ForwardHook(c Client, effects []rewrite.Effect, learn func(bool)) func([]byte) []byte {
	return func(reply []byte) []byte {
		k.Apply(c, effects, reply)
		if learn != nil {
			learn(Accepted(reply))
		}
		return reply
	}
}

// TypeGateHook is the hook of a refusal sent as the type gate
// (TypeGateCommand): Valkey's WRONGTYPE passes (nothing was refused);
// otherwise the refusal is recorded and the client gets msg.
func (k *Keeper) TypeGateHook(c Client, effects []rewrite.Effect, msg string) func([]byte) []byte {
	return func(reply []byte) []byte {
		if bytes.HasPrefix(reply, []byte("-WRONGTYPE ")) {
			return reply // Valkey's error: nothing was refused
		}
		k.Apply(c, effects, nil)
		return resp.AppendError(nil, msg)
	}
}
