package proxy

import (
	"bytes"
	"strconv"

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
// element rewritten (a script's grant number back into +OK, ...); a shaper
// that returns nothing drops its element (a command lockproxy queued; no
// element of Valkey's is empty).
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
		var body []byte
		rest := reply[hdr:]
		var f resp.Framer
		kept := 0
		for i := range shapers {
			m, err := f.Frame(rest)
			if err != nil || m == 0 {
				return reply
			}
			el := rest[:m]
			if shapers[i] != nil {
				if el = shapers[i](el); len(el) == 0 {
					rest = rest[m:]
					continue
				}
			}
			body = append(body, el...)
			kept++
			rest = rest[m:]
		}
		out := reply[:hdr:hdr]
		if kept != len(shapers) {
			out = append([]byte{reply[0]}, strconv.Itoa(kept)+"\r\n"...)
		}
		return append(out, body...)
	}
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
