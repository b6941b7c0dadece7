package proxy

import "sync/atomic"

// pendQueue is a FIFO ring of pending replies that reuses its storage.
type pendQueue struct {
	buf  []pend
	head int
	n    int
	// holds counts the entries Valkey may hold back for long (pend.holds);
	// changed under the connection's lock, read by anyone (busyscript.go).
	holds atomic.Int32
}

func (q *pendQueue) push(p pend) {
	if q.n == len(q.buf) {
		nb := make([]pend, max(16, 2*len(q.buf)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf = nb
		q.head = 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = p
	q.n++
	if p.holds {
		q.holds.Add(1)
	}
}

// popN appends up to n entries to dst, oldest first.
func (q *pendQueue) popN(dst []pend, n int) []pend {
	if n > q.n {
		n = q.n
	}
	for i := 0; i < n; i++ {
		j := q.head
		dst = append(dst, q.buf[j])
		if q.buf[j].holds {
			q.holds.Add(-1)
		}
		q.buf[j] = pend{}
		q.head = (j + 1) % len(q.buf)
	}
	q.n -= n
	return dst
}
