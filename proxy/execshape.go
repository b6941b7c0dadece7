package proxy

import (
	"bytes"

	"github.com/lockproxy/lockproxy/resp"
)

// queueInMulti sends a command while a transaction is open. queued shapes
// its queue-time reply (+QUEUED, or an error); atExec, if set, shapes its
// element of EXEC's reply and records its effects then, when it has run.
func (s *session) queueInMulti(raw []byte, queued func([]byte) []byte, atExec func([]byte) []byte) {
	s.multiShape = append(s.multiShape, atExec)
	s.forward(raw, queued)
}

// execHook shapes EXEC's reply: each queued command with a shaper gets its
// element rewritten (a script's grant number back into +OK, ...); a
// shaper that answers nil drops its element (a command lockproxy queued
// for itself, durable_multi.go).
func (s *session) execHook(shapers []func([]byte) []byte) func([]byte) []byte {
	return func(reply []byte) []byte {
		elems, ok := execSplit(shapers, reply)
		if !ok {
			return reply
		}
		return execJoin(elems)
	}
}

// execSplit is EXEC's reply as its elements, shaped; false when EXEC ran
// nothing (EXECABORT, or nil when WATCH aborted it) or the reply is not
// one element per queued command.
func execSplit(shapers []func([]byte) []byte, reply []byte) ([][]byte, bool) {
	if len(reply) == 0 || (reply[0] != '*' && reply[0] != '~') {
		return nil, false
	}
	v, n, err := resp.Parse(reply)
	if err != nil || n != len(reply) || len(v.Elems) != len(shapers) {
		return nil, false
	}
	// Split the array into its elements' bytes with the framer.
	rest := reply[bytes.IndexByte(reply, '\n')+1:]
	elems := make([][]byte, 0, len(shapers))
	var f resp.Framer
	for i := range shapers {
		m, err := f.Frame(rest)
		if err != nil || m == 0 {
			return nil, false
		}
		el := rest[:m]
		if shapers[i] != nil {
			el = shapers[i](el)
		}
		if el != nil {
			elems = append(elems, el)
		}
		rest = rest[m:]
	}
	return elems, true
}

// execJoin is EXEC's reply of elems.
func execJoin(elems [][]byte) []byte {
	n := 0
	for _, el := range elems {
		n += len(el)
	}
	out := resp.AppendArrayHeader(make([]byte, 0, n+16), len(elems))
	for _, el := range elems {
		out = append(out, el...)
	}
	return out
}

// execSelect is the EXEC shaper of a SELECT queued in a transaction: when
// EXEC ran it and Valkey switched, the session's database is db from then on
// (handleDedicated applies execDB once EXEC's reply is in).
func (s *session) execSelect(db int) func([]byte) []byte {
	return func(el []byte) []byte {
		if string(el) == "+OK\r\n" {
			s.execDB.Store(int64(db))
		}
		return el
	}
}
