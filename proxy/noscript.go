package proxy

// retry sends a script again as EVAL after NOSCRIPT, if that keeps the
// session's order: only when this command is the session's one command in
// flight. The check and the queueing happen under c.mu, and a session counts
// a command in flight before it takes c.mu to send it, so nothing of the
// session's can slip in between. It reports false when it did not retry.
func (c *upConn) retry(p pend) bool {
	eval := c.h.evalFromSHA(p.retry)
	if eval == nil {
		return false
	}
	c.mu.Lock()
	ok := !c.dead.Load() && p.sink.Alone()
	if ok {
		c.q.push(pend{sink: p.sink, hook: p.hook, mute: p.mute, seq: p.seq, fam: p.fam, sent: p.sent})
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

var noscript = []byte("-NOSCRIPT")
