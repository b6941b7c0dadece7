package rewrite

import (
	"bytes"
	"strconv"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// Fold turns the reply of a plan's script into the reply of the command it
// replaced, for a client speaking protocol proto, and writes what the reply
// says (the grant minted, whose lock a release found, ...) into the plan's
// effects, for the proxy to record. A refusal the script decided ("NOTOWNER
// 2") becomes the worded error of the effect it names, which turns
// Refused. Valkey's own errors pass unchanged.
//
// Fold reads only shape, effects and reply: the plan's Keys and Args, which
// alias the client's buffer, are long gone when the reply arrives.
func Fold(shape Shape, effects []Effect, reply []byte, proto int) []byte {
	if len(reply) == 0 || shape == AsIs {
		return reply
	}
	if reply[0] == '-' {
		return foldError(effects, reply)
	}
	el := elements(reply)
	switch shape {
	case AcquireReply, AcquireGetReply, SetNXReply:
		grant, _ := resp.ReplyInt(el.next())
		inner := el.next()
		if len(effects) > 0 {
			effects[0].Grant = grant
		}
		switch {
		case shape == SetNXReply && grant > 0:
			return replyOne
		case shape == SetNXReply:
			return replyZero
		case shape == AcquireGetReply:
			return nullFor(inner, proto)
		case grant > 0:
			return replyOK
		}
		return null(proto)
	case ReleaseReply:
		deleted := el.next()
		if deleted == nil {
			return reply // not the script's reply: the client gets it as it came
		}
		for i := range effects {
			e := &effects[i]
			switch string(bulkText(el.next())) {
			case "released":
				e.Outcome = OutcomeReleased
			case "superseded":
				e.Outcome = OutcomeSuperseded
			case "forwarded":
				e.Outcome = OutcomeForwarded
			}
			e.Holder = string(bulkText(el.next()))
			held, _ := resp.ReplyInt(el.next())
			e.Held = time.Duration(held) * time.Millisecond
			if held < 0 {
				e.Held = -1
			}
			lapsed, _ := resp.ReplyInt(el.next())
			e.Lapsed = lapsed == 1
			e.Grant, _ = resp.ReplyInt(el.next())
			e.Value = append([]byte(nil), bulkText(el.next())...)
			size, _ := resp.ReplyInt(el.next())
			e.ValueLen = int(size)
		}
		return deleted
	case HolderReply:
		acted, _ := resp.ReplyInt(el.next())
		for i := range effects {
			effects[i].Acted = acted == 1
		}
		return nullFor(el.next(), proto)
	case FencedReply:
		tokens := bytes.Fields(bulkText(el.next()))
		for i := range effects {
			if i < len(tokens) {
				n, err := strconv.ParseInt(string(tokens[i]), 10, 64)
				effects[i].Grant = n
				effects[i].Unfenced = err != nil
			}
		}
		return nullFor(el.next(), proto)
	}
	return reply
}

// foldError words a refusal the script decided: "-CODE i" names the code
// and which effect (1-based) it is about. Anything else is Valkey's.
func foldError(effects []Effect, reply []byte) []byte {
	line := bytes.TrimSuffix(reply[1:], []byte("\r\n"))
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return reply
	}
	i, err := strconv.Atoi(string(line[sp+1:]))
	if err != nil || i < 1 || i > len(effects) {
		return reply
	}
	e := &effects[i-1]
	var msg string
	switch string(line[:sp]) {
	case "NOTOWNER":
		if e.Kind == Renewed {
			msg = errNotOwnerRenew(e.Command, e.Key, e.Rule, e.Owner)
		} else {
			msg = errNotOwnerRelease(e.Command, e.Key, e.Rule, e.Owner)
		}
	case "TOKENRELEASE":
		msg = errRejectRelease(e.Command, e.Key, e.Rule)
	case "LOCKED":
		msg = errLocked(e.Command, e.Key, e.Rule)
	case "UNFENCED":
		msg = errUnfenced(e.Command, e.Key, e.Rule)
	default:
		return reply
	}
	e.Kind, e.Reason = Refused, msg
	// The other effects of the command did not happen either.
	for j := range effects {
		if j != i-1 && effects[j].Kind != Refused {
			effects[j].Kind = 0
		}
	}
	return resp.AppendError(nil, msg)
}

// nullFor is a script's inner reply as the client's protocol has it: Lua
// turns a nil reply into false, which Valkey sends back as a null of the
// connection's protocol; a missing element (a nil that ended the Lua
// table) is a null too.
func nullFor(inner []byte, proto int) []byte {
	if len(inner) == 0 || bytes.Equal(inner, replyNull2) || bytes.Equal(inner, replyNull3) {
		return null(proto)
	}
	return inner
}

func null(proto int) []byte {
	if proto >= 3 {
		return replyNull3
	}
	return replyNull2
}

// elements walks a script's array reply one element at a time; next
// returns nil once the elements (or the bytes) run out.
type elemIter struct {
	rest []byte
	n    int
	f    resp.Framer
}

func elements(reply []byte) elemIter {
	var it elemIter
	if len(reply) == 0 || reply[0] != '*' {
		return it
	}
	hdr := bytes.IndexByte(reply, '\n') + 1
	if hdr < 3 {
		return it // no header line: not a reply the scripts send
	}
	n, err := strconv.Atoi(string(bytes.TrimSuffix(reply[1:hdr], []byte("\r\n"))))
	if err != nil || n < 0 {
		return it
	}
	it.rest, it.n = reply[hdr:], n
	return it
}

func (it *elemIter) next() []byte {
	if it.n == 0 {
		return nil
	}
	it.f.Reset()
	m, err := it.f.Frame(it.rest)
	if err != nil || m == 0 {
		it.n = 0
		return nil
	}
	el := it.rest[:m]
	it.rest, it.n = it.rest[m:], it.n-1
	return el
}

// bulkText is the content of a bulk string (or of a simple string) reply;
// nil for anything else.
func bulkText(el []byte) []byte {
	if len(el) < 3 {
		return nil
	}
	switch el[0] {
	case '$':
		hdr := bytes.IndexByte(el, '\n') + 1
		if hdr <= 0 || len(el) < hdr+2 {
			return nil
		}
		return el[hdr : len(el)-2]
	case '+':
		return el[1 : len(el)-2]
	}
	return nil
}

// The replies Fold makes, shared: every acquisition answers one of them.
// Capacity equals length, so an append to one copies it first; callers
// never write into a reply.
var (
	replyOK    = fixed("+OK\r\n")
	replyNull2 = fixed("$-1\r\n")
	replyNull3 = fixed("_\r\n")
	replyOne   = fixed(":1\r\n")
	replyZero  = fixed(":0\r\n")
)

func fixed(s string) []byte { b := []byte(s); return b[:len(b):len(b)] }
