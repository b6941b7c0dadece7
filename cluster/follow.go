package cluster

import (
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// Cmd is what following a redirect needs of a command sent to a cluster
// node: its bytes (a copy: the client's read buffer moves on) and the
// protocol and login its retry goes with.
type Cmd struct {
	Raw   []byte
	Proto int
	Login string // the client's own login, if any: the retry logs in as it
	// Own: the command went on the client's own connection (a
	// transaction, a blocking wait, an AUTH sent on it), whose state
	// another node does not have: a redirect is not followed there but
	// answered with an error, so the client never sees MOVED or ASK.
	Own bool
}

// Bounds on following one command: redirects in a row (a map that keeps
// moving), and TRYAGAIN retries (a multi-key command during a slot's
// migration, its keys on both nodes until the last batch moves).
const (
	maxRedirects  = 5
	maxTryAgain   = 8
	tryAgainPause = 10 * time.Millisecond
)

var askingCmd = resp.AppendCommandStrings(nil, "ASKING")

// Follow is the reply the client gets for the error reply fr, which c got
// from the node at from: a MOVED is followed to the node it names (and the
// map read again soon), an ASK with ASKING to the importing node, a
// TRYAGAIN is retried where the command first went, a few times; any other
// error is the client's as it is. It waits for the nodes it asks: never
// call it on an upstream reader or an event loop.
func (v *View) Follow(c *Cmd, fr []byte, from string) []byte {
	hops, tries := 0, 0
	for {
		var cmds [][]byte
		kind, to := ParseRedirect(fr, from)
		switch {
		case kind == Moved, kind == Ask:
			if kind == Moved {
				v.Stats.Moved.Add(1)
				v.RefreshSoon()
			} else {
				v.Stats.Asked.Add(1)
			}
			if c.Own {
				return resp.AppendError(nil, v.host.OwnMovedText(to))
			}
			if hops++; hops > maxRedirects {
				return resp.AppendError(nil, v.host.RedirectsText(maxRedirects))
			}
			cmds = [][]byte{c.Raw}
			if kind == Ask {
				cmds = [][]byte{askingCmd, c.Raw}
			}
		case kind == TryAgain && !c.Own && tries < maxTryAgain:
			// Valkey's own TRYAGAIN once the retries are spent: the
			// client may retry it later, as cluster clients do.
			tries++
			v.Stats.TryAgain.Add(1)
			time.Sleep(time.Duration(tries) * tryAgainPause)
			cmds = [][]byte{c.Raw}
		default:
			return fr
		}
		r, err := v.host.Do(to, c.Proto, c.Login, cmds...)
		if err != nil {
			v.RefreshSoon()
			return resp.AppendError(nil, v.host.LostText(to, err))
		}
		fr = r[len(r)-1]
		if !isError(fr) {
			return fr
		}
	}
}

// RunSplit runs each slot's part of a split command on its primary (in
// protocol proto, logged in as login), following redirects, and combines
// the replies (Combine). It waits for every part in turn: its caller runs
// it once every earlier reply of the client's is in, so that the parts do
// not overtake earlier commands.
func (v *View) RunSplit(parts []*Part, k SplitKind, proto int, login string, nkeys int) []byte {
	m := v.Map()
	if m == nil {
		return v.NoMap()
	}
	replies := make([][]byte, len(parts))
	for i, pt := range parts {
		addr, ok := m.Primary(pt.Slot)
		if !ok {
			return resp.AppendError(nil, v.host.DownText(pt.Slot))
		}
		raw := resp.AppendCommand(nil, pt.Cmd...)
		r, err := v.host.Do(addr, proto, login, raw)
		if err != nil {
			v.RefreshSoon()
			return resp.AppendError(nil, v.host.LostText(addr, err))
		}
		fr := r[0]
		if isError(fr) {
			fr = v.Follow(&Cmd{Raw: raw, Proto: proto, Login: login}, fr, addr)
		}
		replies[i] = fr
	}
	return Combine(k, parts, replies, nkeys)
}
