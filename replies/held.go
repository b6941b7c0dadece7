package replies

// Replies in command order. Every reply a session is owed has a sequence
// number, given when its command leaves for Valkey or when the proxy
// answers it itself: the client gets the reply whose number is next. In
// front of one primary the replies of a session come back in that order
// anyway. In front of a cluster a pipeline's commands go to several nodes
// at once, each node's connection answers in its own time, and a reply that
// comes before an earlier one is held here until its turn: the session
// never waits at a switch between nodes, and the client still sees Valkey's
// order.
//
// What is held is bounded twice: by max_pipeline (a session has no more
// replies outstanding than that, held ones included), and by
// client_output_buffer_limit, which counts the bytes held with the bytes
// queued for the socket.

// A Run is one reply (or N consecutive ones) that came before its turn,
// numbered Seq (and on); B is a copy, since the reader's buffer moves on.
type Run struct {
	Seq uint64
	N   int
	B   []byte
}

// Held keeps the replies that came before their turn, sorted by sequence
// number: items[head:]. The array is reused: emptied, it starts again at
// its front.
type Held struct {
	items []Run
	head  int
	bytes int // len(B) summed: counted against the output limit
	n     int // replies held (N summed)
}

// Bytes is how many bytes are held (they count against the output limit).
func (r *Held) Bytes() int { return r.bytes }

// Add holds a copy of b, the replies seq .. seq+n-1. Replies of one
// connection arrive in order, so the place is nearly always at the end.
func (r *Held) Add(seq uint64, b []byte, n int) {
	h := Run{Seq: seq, N: n}
	if len(b) > 0 {
		h.B = append(make([]byte, 0, len(b)), b...)
	}
	i := len(r.items)
	r.items = append(r.items, h)
	for i > r.head && r.items[i-1].Seq > seq {
		r.items[i] = r.items[i-1]
		i--
	}
	r.items[i] = h
	r.bytes += len(b)
	r.n += n
}

// AppendTo adds b after the held reply numbered seq (a push that came after
// it), and reports whether that reply is held.
func (r *Held) AppendTo(seq uint64, b []byte) bool {
	for i := r.head; i < len(r.items); i++ {
		h := &r.items[i]
		if h.Seq <= seq && seq < h.Seq+uint64(h.N) {
			h.B = append(h.B, b...)
			r.bytes += len(b)
			return true
		}
	}
	return false
}

// Next removes and returns the held reply numbered seq, if it is held.
func (r *Held) Next(seq uint64) (Run, bool) {
	if r.head == len(r.items) || r.items[r.head].Seq != seq {
		return Run{}, false
	}
	h := r.items[r.head]
	r.items[r.head] = Run{}
	r.head++
	if r.head == len(r.items) {
		r.items, r.head = r.items[:0], 0
		if cap(r.items) > 1024 {
			r.items = nil // not kept after a burst
		}
	}
	r.bytes -= len(h.B)
	r.n -= h.N
	return h, true
}

// Drop forgets everything held (the client is gone) and returns how many
// replies that was.
func (r *Held) Drop() int {
	n := r.n
	*r = Held{}
	return n
}
