package replies

import (
	"bytes"
	"testing"
)

// TestQueue: bytes added across chunk boundaries come out whole and in
// order, whether the writer takes them all (Take), part of a chunk or
// whole chunks (WriteTo); Len follows, and Drop empties the queue.
func TestQueue(t *testing.T) {
	var q Queue
	var want []byte
	for i := range 3 * outChunk / 1000 {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, 1000)
		q.Add(b)
		want = append(want, b...)
	}
	if q.Len() != len(want) {
		t.Fatalf("Len %d, want %d", q.Len(), len(want))
	}
	var got []byte
	// A writer that takes 700 bytes at a time, then everything.
	n := q.WriteTo(func(b []byte) int {
		m := min(len(b), 700)
		got = append(got, b[:m]...)
		return m
	})
	if n != 700 || q.Len() != len(want)-700 {
		t.Fatalf("WriteTo took %d, Len %d after", n, q.Len())
	}
	q.Add([]byte("tail"))
	want = append(want, "tail"...)
	n = q.WriteTo(func(b []byte) int {
		got = append(got, b...)
		return len(b)
	})
	if !bytes.Equal(got, want) || q.Len() != 0 || n != len(want)-700 {
		t.Fatalf("written %d bytes (%d by the second WriteTo), Len %d after; want %d", len(got), n, q.Len(), len(want))
	}
	q.Add([]byte("x"))
	q.Add(bytes.Repeat([]byte("y"), outChunk))
	bufs := q.Take(nil)
	if q.Len() != 0 || len(bufs) != 2 || !bytes.Equal(bytes.Join(bufs, nil), append([]byte("x"), bytes.Repeat([]byte("y"), outChunk)...)) {
		t.Fatalf("Take gave %d chunks, Len %d after", len(bufs), q.Len())
	}
	if bufs = Recycle(bufs); len(bufs) != 0 {
		t.Fatal("Recycle did not empty the slice")
	}
	q.Add([]byte("z"))
	q.Drop()
	if q.Len() != 0 {
		t.Fatal("Drop left bytes")
	}
}
