package locks

import (
	"bytes"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/rewrite"
)

// EvalFromSHA turns an encoded EVALSHA of one of lockproxy's scripts into
// the same call as EVAL, for the retry after NOSCRIPT.
func EvalFromSHA(cmd []byte) []byte {
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
	eval := "EVAL"
	if c := cmd[hdr+4]; 'a' <= c && c <= 'z' {
		eval = "eval" // the client's spelling (EncodeScript)
	}
	out = resp.AppendBulk(out, []byte(eval))
	out = resp.AppendBulk(out, []byte(sc.Body))
	return append(out, rest...)
}

// EncodeScript encodes a plan as EVALSHA (or EVAL) in one allocation of
// the right size: it runs for every lock command, and growing the buffer
// from nothing cost more than the rest of the encoding.
func EncodeScript(plan rewrite.Plan, sha bool) []byte {
	name, body := "EVAL", plan.Script.Body
	if plan.Script.Fn != "" {
		name = plan.Script.Verb // FCALL of the function's monitored registration
	} else if plan.Script.RO {
		name = "EVAL_RO" // never by SHA1: Valkey may not hold the text as sent
	} else if sha {
		name, body = "EVALSHA", plan.Script.SHA
	}
	if plan.Verb != nil {
		name = spelled(name, plan.Verb)
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

// spelled is name in the letter case of the client's verb: the verb
// itself when it is the same command, else lower case for a verb that
// starts with a lower-case letter (an evalsha sent as EVAL: eval).
func spelled(name string, verb []byte) string {
	lower := ""
	switch name {
	case "EVAL":
		lower = "eval"
	case "EVALSHA":
		lower = "evalsha"
	case "EVAL_RO":
		lower = "eval_ro"
	default:
		return name
	}
	switch {
	case resp.EqualFold(verb, lower):
		if string(verb) == name {
			return name
		}
		return string(verb)
	case len(verb) > 0 && 'a' <= verb[0] && verb[0] <= 'z':
		return lower
	}
	return name
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
