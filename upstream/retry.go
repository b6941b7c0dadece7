package upstream

import "bytes"

// retry sends a script again as EVAL after NOSCRIPT, if that keeps the
// session's order: only when this command is the session's one command in
// flight. The check and the queueing happen under c.mu, and a session counts
// a command in flight before it takes c.mu to send it, so nothing of the
// session's can slip in between. It reports false when it did not retry.
func (c *Conn) retry(p Pend) bool {
	eval := c.h.EvalFromSHA(p.Retry)
	if eval == nil {
		return false
	}
	c.mu.Lock()
	ok := !c.dead.Load() && p.Sink.Alone()
	if ok {
		c.q.push(Pend{Sink: p.Sink, Hook: p.Hook, Mute: p.Mute, Seq: p.Seq, Fam: p.Fam, Sent: p.Sent})
		c.wbuf = append(c.wbuf, eval...)
	}
	c.mu.Unlock()
	if ok {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return ok
}

// IsNoScript reports whether fr is Valkey's NOSCRIPT error (an EVALSHA of
// a script it does not have).
func IsNoScript(fr []byte) bool { return bytes.HasPrefix(fr, noscript) }

var noscript = []byte("-NOSCRIPT")
