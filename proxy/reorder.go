package proxy

// Replies in command order. Every reply a session is owed has a sequence
// number, given when its command leaves for Valkey (flush) or when the proxy
// answers it itself (local, aside): the client gets reply number outSeq
// next. In front of one primary the replies of a session come back in that
// order anyway. In front of a cluster a pipeline's commands go to several
// nodes at once, each node's connection answers in its own time, and a reply
// that comes before an earlier one is held here until its turn: the session
// never waits at a switch between nodes, and the client still sees Valkey's
// order.
//
// What is held is bounded twice: by max_pipeline (a session has no more
// replies outstanding than that, held ones included), and by
// client_output_buffer_limit, which counts the bytes held with the bytes
// queued for the socket.

// heldReply is one reply (or run of n consecutive ones) that came before its
// turn; b is a copy, since the reader's buffer moves on.
type heldReply struct {
	seq uint64
	n   int
	b   []byte
}

// reorder keeps held replies sorted by sequence number: items[head:].
// The array is reused: emptied, it starts again at its front.
type reorder struct {
	items []heldReply
	head  int
	bytes int // len(b) summed: counted against the output limit
	n     int // replies held (n summed)
}

// add holds a copy of b, the replies seq .. seq+n-1. Replies of one
// connection arrive in order, so the place is nearly always at the end.
func (r *reorder) add(seq uint64, b []byte, n int) {
	h := heldReply{seq: seq, n: n}
	if len(b) > 0 {
		h.b = append(make([]byte, 0, len(b)), b...)
	}
	i := len(r.items)
	r.items = append(r.items, h)
	for i > r.head && r.items[i-1].seq > seq {
		r.items[i] = r.items[i-1]
		i--
	}
	r.items[i] = h
	r.bytes += len(b)
	r.n += n
}

// appendTo adds b after the held reply numbered seq (a push that came after
// it), and reports whether that reply is held.
func (r *reorder) appendTo(seq uint64, b []byte) bool {
	for i := r.head; i < len(r.items); i++ {
		h := &r.items[i]
		if h.seq <= seq && seq < h.seq+uint64(h.n) {
			h.b = append(h.b, b...)
			r.bytes += len(b)
			return true
		}
	}
	return false
}

// next removes and returns the held reply numbered seq, if it is held.
func (r *reorder) next(seq uint64) (heldReply, bool) {
	if r.head == len(r.items) || r.items[r.head].seq != seq {
		return heldReply{}, false
	}
	h := r.items[r.head]
	r.items[r.head] = heldReply{}
	r.head++
	if r.head == len(r.items) {
		r.items, r.head = r.items[:0], 0
		if cap(r.items) > 1024 {
			r.items = nil // not kept after a burst
		}
	}
	r.bytes -= len(h.b)
	r.n -= h.n
	return h, true
}

// drop forgets everything held (the client is gone) and returns how many
// replies that was.
func (r *reorder) drop() int {
	n := r.n
	*r = reorder{}
	return n
}
