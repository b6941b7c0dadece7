package proxy

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/policy"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// Owner is the session as the rewrite package sees it: who the client is
// under a rule's session scope. The same client name, or host, is the same
// owner on every lockproxy instance in front of one Valkey; a connection
// owner names this instance too.
func (s *session) Owner(r *policy.Rule) string {
	switch r.Session {
	case policy.SessionClientName:
		if s.name != "" {
			return "name:" + s.name
		}
	case policy.SessionClientAddr:
		return "addr:" + s.host
	}
	return s.connOwner
}

// Proto is the RESP version the client speaks, for the Fenced script.
func (s *session) Proto() int { return s.proto }

// lockPlan applies the lock rules to one command. It reports whether it
// dealt with the command; false means "route it as usual".
func (s *session) lockPlan(cmd resp.Command) bool {
	d := s.p.decider.Load()
	if !d.Active() {
		return false
	}
	if d.Table == nil {
		if s.lp != nil && !s.p.tableReady() {
			s.offLoop(func() { s.p.loadTable() })
			return true
		}
		d = s.p.loadTable()
		if d.Table == nil {
			s.local(resp.AppendError(nil, s.p.noTableError()))
			return true
		}
	}
	plan := d.Decide(cmd.Args, s, s.keys[:0])
	if plan.Kind == rewrite.NeedKeys {
		var keys []keyspec.KeyWithFlags
		var err error
		switch m := s.movable; {
		case m != nil && bytes.Equal(m.raw, cmd.Raw):
			keys, err = m.keys, m.err
			s.movable = nil
		case s.lp != nil:
			// A round trip on the side connection: off the loop.
			raw, args := cloneArgs(cmd)
			s.offLoop(func() {
				keys, err := s.p.getKeys(args)
				s.movable = &movableKeys{raw: raw, keys: keys, err: err}
			})
			return true
		default:
			keys, err = s.p.getKeys(cmd.Args)
		}
		if err != nil {
			// Valkey will refuse the command too (bad arguments), or is
			// unreachable: either way there is no lock to protect.
			plan = rewrite.Plan{}
		} else {
			plan = d.DecideKeys(cmd.Args, keys, s)
		}
	}
	switch plan.Kind {
	case rewrite.Forward:
		if len(plan.Effects) == 0 && plan.Learn == nil {
			return false
		}
		effects, learn := plan.Effects, plan.Learn
		hook := func(reply []byte) []byte {
			s.apply(effects, reply)
			if learn != nil {
				learn(accepted(reply))
			}
			return reply
		}
		if s.ded != nil && s.inMulti {
			// Learned at EXEC, from the command's own element: a discarded
			// or aborted transaction teaches nothing.
			s.queueInMulti(cmd.Raw, nil, hook)
			return true
		}
		if !forwarded(s.p.cmds().kind(cmd.Args[0])) {
			// A command with its own routing (none that touch keys today):
			// record what was seen and let the usual path send it.
			s.apply(effects, nil)
			return false
		}
		s.forward(cmd.Raw, hook)
	case rewrite.Refuse:
		if s.refuseTyped(cmd, d, plan) {
			return true // WRONGTYPE or the refusal, from Valkey (typegate.go)
		}
		s.apply(plan.Effects, nil)
		msg := plan.Err
		if s.ded != nil && s.inMulti {
			// Refused while queued: Valkey must see a queue-time error so
			// that EXEC aborts with EXECABORT, as it does for its own. An
			// unknown command is such an error; the client sees ours.
			s.queueInMulti(resp.AppendCommandStrings(nil, "LOCKPROXY-REFUSED"),
				func([]byte) []byte { return resp.AppendError(nil, msg) }, nil)
			return true
		}
		s.local(resp.AppendError(nil, msg))
	case rewrite.Run:
		s.run(plan)
	}
	return true
}

// run sends a plan's script as EVALSHA. Every upstream connection loads
// lockproxy's scripts when it opens, so NOSCRIPT only follows a SCRIPT FLUSH
// on a live connection; the command is then sent again as EVAL when nothing
// of the session's is in flight behind it (see upConn.retryLocked), and
// answered with an error that says it did not run otherwise. Inside MULTI,
// or with more commands of the client's already read behind it, it goes as
// EVAL straight away.
func (s *session) run(plan rewrite.Plan) {
	proto := s.proto
	effects := plan.Effects
	shape := plan.Shape
	sc := plan.Script
	hook := func(reply []byte) []byte {
		out := rewrite.Fold(shape, effects, sc.Unwrap(reply), proto)
		s.apply(effects, out)
		return out
	}
	if s.ded != nil && s.ded.stream.Load() {
		s.local(resp.AppendError(nil, errStreamLock))
		return
	}
	if s.p.cl != nil && !s.routeScript(plan.Keys) {
		return
	}
	if s.ded != nil && s.inMulti {
		s.queueInMulti(encodeScript(plan, false), nil, hook)
		return
	}
	if s.rd.Buffered() > 0 || sc.FirstUse() {
		// More commands are already here behind this one: EVAL needs no
		// retry that could overtake them. A wrapper's first use: EVAL
		// loads it.
		s.forward(encodeScript(plan, false), hook)
		return
	}
	sha := encodeScript(plan, true)
	s.forwardRetry(sha, sha, hook) // the EVAL twin is built only on NOSCRIPT
}

// evalFromSHA turns an encoded EVALSHA of one of lockproxy's scripts into
// the same call as EVAL, for the retry after NOSCRIPT.
func evalFromSHA(cmd []byte) []byte {
	// *N\r\n$7\r\nEVALSHA\r\n$40\r\n<sha>\r\n<the rest>
	hdr := bytes.IndexByte(cmd, '\n') + 1
	shaAt := hdr + len("$7\r\nEVALSHA\r\n$40\r\n")
	sha := string(cmd[shaAt : shaAt+40])
	rest := cmd[shaAt+42:]
	sc := rewrite.ScriptBySHA(sha)
	if sc == nil {
		return nil
	}
	out := append([]byte(nil), cmd[:hdr]...)
	out = resp.AppendBulk(out, []byte("EVAL"))
	out = resp.AppendBulk(out, []byte(sc.Body))
	return append(out, rest...)
}

// encodeScript encodes a plan as EVALSHA (or EVAL) in one allocation of
// the right size: it runs for every lock command, and growing the buffer
// from nothing cost more than the rest of the encoding.
func encodeScript(plan rewrite.Plan, sha bool) []byte {
	name, body := "EVAL", plan.Script.Body
	if sha {
		name, body = "EVALSHA", plan.Script.SHA
	}
	// Exactly: a generous estimate doubled the bytes each lock command
	// allocated, and the collector's work with them.
	var nb [20]byte
	numkeys := strconv.AppendInt(nb[:0], int64(len(plan.Keys)), 10)
	n := 3 + len(plan.Keys) + len(plan.Args)
	size := frameLen(n) + frameLen(len(name)) + len(name) + frameLen(len(body)) + len(body) + frameLen(len(numkeys)) + len(numkeys)
	for _, a := range plan.Keys {
		size += frameLen(len(a)) + len(a)
	}
	for _, a := range plan.Args {
		size += frameLen(len(a)) + len(a)
	}
	out := resp.AppendArrayHeader(make([]byte, 0, size), n)
	out = resp.AppendBulkString(out, name)
	out = resp.AppendBulkString(out, body)
	out = resp.AppendBulk(out, numkeys)
	for _, a := range plan.Keys {
		out = resp.AppendBulk(out, a)
	}
	for _, a := range plan.Args {
		out = resp.AppendBulk(out, a)
	}
	return out
}

// frameLen is the size of a RESP length header ("$12\r\n") and, for a
// bulk, its closing CRLF: the type byte, the digits of n, two CRLFs. (An
// array header has one CRLF: the extra two bytes are slack.)
func frameLen(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return 1 + d + 4
}

// apply records what a command's reply meant, in the counters and the
// audit: effects as Fold filled them in (or as decided, for commands
// forwarded or refused without a script). reply is the client's reply, nil
// for effects known before sending (refusals).
func (s *session) apply(effects []rewrite.Effect, reply []byte) {
	if len(reply) > 0 && reply[0] == '-' {
		if bytes.HasPrefix(reply, []byte("-STALE ")) {
			s.staleWrite(effects, reply)
			return
		}
		if !refusedBy(effects) {
			return // Valkey refused it: nothing changed
		}
	}
	now := time.Now()
	p := s.p
	for i := range effects {
		e := &effects[i]
		// First what only counts: no event to build.
		switch e.Kind {
		case 0:
			continue // did not happen: another lock key of the command was refused
		case rewrite.Grant:
			if e.Grant == 0 {
				p.contended(e, now)
			} else {
				p.granted(e, now)
			}
			continue
		case rewrite.SetValue:
			continue
		case rewrite.FencedWrite:
			if !e.Unfenced || e.Rule == nil || e.Rule.Fencing.UnfencedWrites != policy.UnfencedObserve {
				continue // a write that passed its fence is not an intervention
			}
		}
		ev := Event{Time: now, Client: s.addr, Name: s.nameSnapshot(), Command: e.Command, Key: string(e.Key),
			Owner: e.Owner, Holder: e.Holder, Grant: e.Grant}
		if e.Rule != nil {
			ev.Rule = e.Rule.Pattern.String()
		}
		n, isInt := resp.ReplyInt(reply)
		switch e.Kind {
		case rewrite.Released:
			switch e.Outcome {
			case rewrite.OutcomeForwarded:
				ev.Outcome, ev.Detail = OutcomeObserved, "forwarded unchecked"
				if e.Holder != "" {
					ev.Outcome = OutcomeSuccessorDeleted
					ev.Detail = "deleted a lock granted to " + e.Holder
				}
			default:
				p.released(e)
				ev.Outcome, ev.Token = OutcomeRewritten, maskHead(e.Value, e.ValueLen)
				ev.Detail = releaseDetail(n)
				if e.Outcome == rewrite.OutcomeSuperseded && e.Holder != "" {
					ev.Outcome = OutcomeSuccessorPrevented
					ev.Detail = "the lock is now " + e.Holder + "'s; not deleted"
				}
			}
		case rewrite.Renewed:
			ev.Outcome = OutcomeRewritten
			ev.Detail = "token-checked lease change"
			if !e.Acted {
				ev.Detail = "token-checked lease change: no longer the holder, nothing changed"
			}
		case rewrite.Observed:
			ev.Outcome, ev.Detail = OutcomeObserved, e.Reason
			if isInt && n > int64(e.Plain) && e.Holder != "" {
				ev.Outcome = OutcomeSuccessorDeleted
				ev.Detail = "deleted a lock granted to " + e.Holder
			}
		case rewrite.Refused:
			ev.Outcome, ev.Detail = OutcomeRefused, e.Reason
			if e.Holder != "" {
			}
		case rewrite.Flushed:
			ev.Outcome = OutcomeFlushed
		case rewrite.FencedWrite: // unfenced, under unfenced_writes: observe
			ev.Outcome, ev.Detail = OutcomeObserved, "write to a guarded key without a grant of its lock"
		}
		p.record(ev, e) // ring, log line, counters by rule and outcome, audit file
	}
}

// accepted reports whether a reply says Valkey carried the command out
// (anything but an error).
func accepted(reply []byte) bool {
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

// queueInMulti sends a command while a transaction is open. queued shapes
// its queue-time reply (+QUEUED, or an error); atExec, if set, shapes its
// element of EXEC's reply and records its effects then, when it has run.
func (s *session) queueInMulti(raw []byte, queued func([]byte) []byte, atExec func([]byte) []byte) {
	s.multiShape = append(s.multiShape, atExec)
	s.forward(raw, queued)
}

// execHook shapes EXEC's reply: each queued command with a shaper gets its
// element rewritten (a script's grant number back into +OK, ...).
func (s *session) execHook(shapers []func([]byte) []byte) func([]byte) []byte {
	return func(reply []byte) []byte {
		if len(reply) == 0 || (reply[0] != '*' && reply[0] != '~') {
			return reply // EXECABORT, or nil when WATCH aborted: nothing ran
		}
		v, n, err := resp.Parse(reply)
		if err != nil || n != len(reply) || len(v.Elems) != len(shapers) {
			return reply
		}
		// Split the array into its elements' bytes with the framer.
		hdr := bytes.IndexByte(reply, '\n') + 1
		out := append([]byte(nil), reply[:hdr]...)
		rest := reply[hdr:]
		var f resp.Framer
		for i := range shapers {
			m, err := f.Frame(rest)
			if err != nil || m == 0 {
				return reply
			}
			el := rest[:m]
			if shapers[i] != nil {
				el = shapers[i](el)
			}
			out = append(out, el...)
			rest = rest[m:]
		}
		return out
	}
}

// loadTable reads Valkey's command table (COMMAND) once the upstream is
// reachable, and installs a decider that has it.
func (p *Proxy) loadTable() *rewrite.Decider {
	p.tableMu.Lock()
	defer p.tableMu.Unlock()
	d := p.decider.Load()
	if d.Table != nil || time.Since(p.tableTried) < p.opts.Upstream.ReconnectBackoff.D() {
		return d
	}
	p.tableTried = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Upstream.DialTimeout.D())
	defer cancel()
	t, err := keyspec.Load(ctx, p.side)
	if err != nil {
		p.tableErr = err
		p.log.Warn("cannot read Valkey's command table yet", "upstream", p.tableAddr(), "err", err)
		return d
	}
	p.tableErr = nil
	scriptcheck.UseTable(t) // key effects in scripts, from the same table
	nd := *d
	nd.Table = t
	p.decider.Store(&nd)
	return &nd
}

// movableKeys is COMMAND GETKEYSANDFLAGS's answer for the command raw,
// asked off the loop.
type movableKeys struct {
	raw  []byte
	keys []keyspec.KeyWithFlags
	err  error
}

// cloneArgs copies a command out of the client's read buffer, for a job
// that outlives the buffer's contents.
func cloneArgs(cmd resp.Command) (raw []byte, args [][]byte) {
	raw = bytes.Clone(cmd.Raw)
	args = make([][]byte, len(cmd.Args))
	for i, a := range cmd.Args {
		args[i] = bytes.Clone(a)
	}
	return raw, args
}

// tableReady reports whether loadTable would return at once: the table is
// loaded, or the last attempt failed within the reconnect backoff.
func (p *Proxy) tableReady() bool {
	if p.decider.Load().Table != nil {
		return true
	}
	if !p.tableMu.TryLock() {
		return false // being loaded
	}
	defer p.tableMu.Unlock()
	return p.decider.Load().Table != nil || time.Since(p.tableTried) < p.opts.Upstream.ReconnectBackoff.D()
}

// getKeys asks Valkey which keys a command with movable keys touches.
func (p *Proxy) getKeys(args [][]byte) ([]keyspec.KeyWithFlags, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Upstream.DialTimeout.D())
	defer cancel()
	q := make([]interface{}, 0, len(args)+2)
	q = append(q, "COMMAND", "GETKEYSANDFLAGS")
	for _, a := range args {
		q = append(q, string(a))
	}
	reply, err := p.side.Do(ctx, q...).Slice()
	if err != nil {
		return nil, err
	}
	return keyspec.GetKeysAndFlags(reply)
}

// staleWrite records a fenced write the fence refused.
func (s *session) staleWrite(effects []rewrite.Effect, reply []byte) {
	for i := range effects {
		e := &effects[i]
		if e.Kind != rewrite.FencedWrite {
			continue
		}
		ev := Event{Time: time.Now(), Client: s.addr, Name: s.nameSnapshot(), Command: e.Command,
			Key: string(e.Key), Owner: e.Owner, Grant: staleToken(reply), Outcome: OutcomeStaleRefused,
			Detail: string(bytes.TrimRight(reply[1:], "\r\n"))}
		if e.Rule != nil {
			ev.Rule = e.Rule.Pattern.String()
		}
		s.p.record(ev, e)
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

// noTableError is the refusal while the command table is missing, with the
// address tried and why it failed.
func (p *Proxy) noTableError() string {
	p.tableMu.Lock()
	err := p.tableErr
	p.tableMu.Unlock()
	return errNoCommandTable(p.tableAddr(), err)
}

func (p *Proxy) tableAddr() string {
	if addr, err := p.upstreamAddr(); err == nil {
		return addr
	}
	return p.opts.Upstream.Addr
}
