package proxy

import (
	"bytes"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

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
	if plan.Script.Fn != "" {
		name = plan.Script.Verb // FCALL of the function's monitored registration
	} else if sha {
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
