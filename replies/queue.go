package replies

import (
	"net"
	"sync"
)

// A Queue is the output a client is owed and its socket has not taken yet,
// kept in chunks of outChunk bytes. client_output_buffer_limit bounds the
// bytes held, and chunks make that the memory held too: one growing buffer
// kept up to twice its length in capacity, the copies left behind each time
// it grew, and the batch the writer was blocked on — about five times the
// limit in all before a client that did not read was cut off.
type Queue struct {
	chunks [][]byte // the last one may have room left
	n      int      // bytes queued
}

// outChunk is the size of one chunk: large enough that a writev of a
// client's backlog takes few of them, small enough that the last, partly
// filled one wastes little.
const outChunk = 64 << 10

var chunkPool = sync.Pool{New: func() any { return new([outChunk]byte) }}

// Len is how many bytes are queued.
func (q *Queue) Len() int { return q.n }

// Add copies b to the end of the queue.
func (q *Queue) Add(b []byte) {
	q.n += len(b)
	for len(b) > 0 {
		k := len(q.chunks) - 1
		if k < 0 || len(q.chunks[k]) == cap(q.chunks[k]) {
			q.chunks = append(q.chunks, chunkPool.Get().(*[outChunk]byte)[:0])
			k++
		}
		c := q.chunks[k]
		m := copy(c[len(c):cap(c)], b)
		q.chunks[k] = c[:len(c)+m]
		b = b[m:]
	}
}

// Take moves every chunk to dst (for the writer) and empties the queue.
func (q *Queue) Take(dst net.Buffers) net.Buffers {
	dst = append(dst, q.chunks...)
	clear(q.chunks)
	q.chunks, q.n = q.chunks[:0], 0
	return dst
}

// WriteTo hands the queued chunks, oldest first, to write until it takes
// less than a whole chunk, removes what it took, and returns how many bytes
// that was.
func (q *Queue) WriteTo(write func([]byte) int) int {
	total := 0
	for len(q.chunks) > 0 {
		c := q.chunks[0]
		n := write(c)
		total += n
		q.n -= n
		if n < len(c) {
			q.chunks[0] = c[n:] // the rest, in the same array: Add may still fill it
			break
		}
		if cap(c) == outChunk && len(q.chunks) > 1 {
			chunkPool.Put((*[outChunk]byte)(c[:outChunk]))
		} else if len(q.chunks) == 1 {
			q.chunks[0] = c[:0] // the last chunk: kept, empty, for what comes next
			break
		}
		q.chunks = append(q.chunks[:0], q.chunks[1:]...)
	}
	return total
}

// Drop forgets what is queued (the client is gone).
func (q *Queue) Drop() {
	q.chunks = Recycle(q.chunks)
	q.n = 0
}

// Recycle gives the chunks among bufs back for reuse (the writer's copy of
// what Take gave it, once written) and returns bufs emptied.
func Recycle(bufs [][]byte) [][]byte {
	for i, c := range bufs {
		if cap(c) == outChunk {
			chunkPool.Put((*[outChunk]byte)(c[:outChunk]))
		}
		bufs[i] = nil
	}
	return bufs[:0]
}
