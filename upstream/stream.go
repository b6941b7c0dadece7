package upstream

// A dedicated connection in stream mode: its replies no longer pair with
// commands (SUBSCRIBE, MONITOR, CLIENT REPLY OFF, SYNC), and every frame
// goes to the owner as it comes (dispatch).

// StartStream puts c into stream mode once every reply owed on it came;
// with pipe, a byte pipe (a replication stream is not RESP frames).
func (c *Conn) StartStream(pipe bool) {
	c.pipe.Store(pipe)
	c.stream.Store(true)
}

// Streaming reports whether c is in stream mode.
func (c *Conn) Streaming() bool { return c.stream.Load() }

// Piped reports whether c carries a replication stream.
func (c *Conn) Piped() bool { return c.pipe.Load() }

// ExpectReset notes a RESET about to be sent in stream mode: with its
// +RESET, replies pair with commands again, and Unstreamed is signalled.
func (c *Conn) ExpectReset() { c.resets.Add(1) }

// Unstreamed is signalled when the last RESET sent in stream mode is
// answered (ExpectReset).
func (c *Conn) Unstreamed() <-chan struct{} { return c.unstream }

// Done is closed when c dies.
func (c *Conn) Done() <-chan struct{} { return c.quit }

// LastDelivered is the sequence number of the last reply the reader handed
// the owner (ok: one was); only for the reader (Owner.PushAfter).
func (c *Conn) LastDelivered() (seq uint64, ok bool) { return c.lastSeq, c.haveSeq }
