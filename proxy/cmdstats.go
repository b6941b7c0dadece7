package proxy

import (
	"bytes"
	"time"

	"github.com/lockproxy/lockproxy/commands"
	"github.com/lockproxy/lockproxy/keyspec"
	"github.com/lockproxy/lockproxy/telemetry"
	"github.com/lockproxy/lockproxy/upstream"
)

// The per-command accounting (telemetry.CommandStats, the slow log): each
// command is counted under its label (commands.LabelOf) when handled, and
// its reply is timed and its error code word counted when the reply goes
// to the client's socket. A command's mark (label, when handling began)
// goes with each reply it owes: one mark per sequence number, queued in
// sequence order before the number can be answered (flush, owe), and taken
// in the same order as the replies reach the output (deliverCork, under
// outMu), so a reply meets its command's mark whichever goroutine delivers
// it. A muted reply (CLIENT REPLY OFF, the proxy's own commands sent for
// a client's) reaches the output empty and is not timed.

// cmdMark is what a reply owed needs of its command.
type cmdMark struct {
	start int64 // upstream.MonoNow when handling began
	label commands.Label
	keys  int16 // keys, for the slow log; -1: not counted
	args  int32 // arguments after the name
}

// markQueue is the marks of the replies owed, oldest first: a ring that
// grows with the deepest pipeline seen and never shrinks, so queueing a
// mark does not allocate once the ring is large enough.
type markQueue struct {
	ring []cmdMark
	head int // the oldest mark
	n    int
}

func (q *markQueue) push(m cmdMark) {
	if q.n == len(q.ring) {
		grown := make([]cmdMark, max(16, 2*len(q.ring)))
		for i := 0; i < q.n; i++ {
			grown[i] = q.ring[(q.head+i)%len(q.ring)]
		}
		q.ring, q.head = grown, 0
	}
	q.ring[(q.head+q.n)%len(q.ring)] = m
	q.n++
}

func (q *markQueue) pop() (cmdMark, bool) {
	if q.n == 0 {
		return cmdMark{}, false
	}
	m := q.ring[q.head]
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	return m, true
}

// beginCommand notes the command about to be handled: its label, and when
// it was read (readAt), unless it is a command put back (step.go), which
// keeps the time it was first handled.
func (s *session) beginCommand(args [][]byte) {
	if s.resumed {
		s.resumed = false
		return
	}
	if s.readAt == 0 {
		s.readAt = upstream.MonoNow()
	}
	label := commands.LabelOf(args[0])
	s.cur = cmdMark{start: s.readAt, label: label, keys: -1, args: int32(len(args) - 1)}
	if s.p.ops.slow.Enabled() {
		// Only the slow log names the keys' count: counted only while it
		// is on, by the command's key specs, looked up by label.
		if t := s.p.decider.Load().Table; t != nil {
			c := s.p.labelCommands(t).cmds[label]
			if c != nil && c.Subcommands != nil {
				c = t.Command(args)
			}
			if c != nil {
				keys, _ := c.Keys(args, s.keys[:0])
				s.cur.keys = int16(min(len(keys), 1<<15-1))
			}
		}
	}
}

// labelCommands is a command table's command of each label (nil for
// unknown and for names the server does not have).
type labelCommands struct {
	table *keyspec.Table
	cmds  [commands.NumLabels]*keyspec.Command
}

// labelCommands is t's command of each label, made once per table.
func (p *Proxy) labelCommands(t *keyspec.Table) *labelCommands {
	if lc := p.byLabel.Load(); lc != nil && lc.table == t {
		return lc
	}
	lc := &labelCommands{table: t}
	for i, name := range commands.LabelNames {
		if commands.Label(i) != commands.LabelUnknown {
			lc.cmds[i] = t.Command([][]byte{[]byte(name)})
		}
	}
	p.byLabel.Store(lc)
	return lc
}

// protocolMark is the mark of the error answering a stream that is not
// RESP: there is no command to name.
func (s *session) protocolMark() {
	s.cur = cmdMark{start: upstream.MonoNow(), label: commands.LabelUnknown, keys: -1}
}

// countCommand counts the command handled under its label.
func (s *session) countCommand() { s.p.ops.perCmd.Count(int(s.cur.label)) }

// queueMarks queues, under outMu, the marks of n replies just numbered.
func (s *session) queueMarks(marks []cmdMark) {
	s.outMu.Lock()
	for _, m := range marks {
		s.marks.push(m)
	}
	s.outMu.Unlock()
}

// observeReplies takes the marks of n replies in b reaching the output now
// (under outMu) and records each: its time, its error code word, and, past
// the slow log's threshold, its slow-log entry. Replies of a run (n > 1)
// are framed only when one of them may be an error.
func (s *session) observeReplies(b []byte, n int, now int64) {
	switch {
	case len(b) == 0:
		for range n {
			s.observe(false, -1, now) // muted
		}
	case n == 1:
		s.observe(true, telemetry.ErrorCode(b), now)
	case bytes.IndexByte(b, '-') < 0 && bytes.IndexByte(b, '!') < 0:
		for range n {
			s.observe(true, -1, now) // no error among them
		}
	default:
		for n > 0 {
			m, err := s.framer.Frame(b)
			if err != nil || m == 0 {
				s.framer.Reset()
				m = len(b)
			}
			if m > 0 && b[0] == '>' {
				b = b[m:] // a push held with the reply before it (PushAfter)
				continue
			}
			s.observe(m > 0, telemetry.ErrorCode(b[:m]), now)
			b = b[m:]
			n--
		}
	}
}

// observe records one reply reaching the output (sent: it was not muted),
// with its error code (an index in telemetry.ErrorCodes, -1 for none).
func (s *session) observe(sent bool, code int, now int64) {
	m, ok := s.marks.pop()
	if !ok || !sent {
		return
	}
	d := now - m.start
	s.p.ops.perCmd.Observe(int(m.label), d, code)
	if slow := s.p.ops.slow; slow.Slow(d) {
		e := telemetry.Slow{At: time.Now().Add(-time.Duration(d)), Duration: time.Duration(d),
			Command: commands.LabelNames[m.label], Keys: int(m.keys), Args: int(m.args),
			ClientID: s.id, Addr: s.addr, Name: s.nameSnapshot()}
		if code >= 0 {
			e.Error = telemetry.ErrorCodes[code]
		}
		slow.Add(e)
	}
}
