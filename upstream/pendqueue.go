package upstream

import "sync/atomic"

// pendQueue is a FIFO ring of pending replies that reuses its storage.
type pendQueue struct {
	buf  []Pend
	head int
	n    int
	// holds counts the entries Valkey may hold back for long (Pend.holds);
	// changed under the connection's lock, read by anyone (Conn.Holds).
	holds atomic.Int32
}

func (q *pendQueue) push(p Pend) {
	if q.n == len(q.buf) {
		nb := make([]Pend, max(16, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf = nb
		q.head = 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = p
	q.n++
	if p.Holds {
		q.holds.Add(1)
	}
}

// popN appends up to n entries to dst, oldest first.
func (q *pendQueue) popN(dst []Pend, n int) []Pend {
	if n > q.n {
		n = q.n
	}
	for i := 0; i < n; i++ {
		j := q.head
		dst = append(dst, q.buf[j])
		if q.buf[j].Holds {
			q.holds.Add(-1)
		}
		q.buf[j] = Pend{}
		q.head = (j + 1) % len(q.buf)
	}
	q.n -= n
	return dst
}
