package proxy

import "testing"

// Replies held out of order come out in sequence, runs included, and the
// counts follow.
func TestReorder(t *testing.T) {
	var r reorder
	r.add(5, []byte("e"), 1)
	r.add(2, []byte("bc"), 2) // replies 2 and 3
	r.add(4, nil, 1)          // a muted one
	r.add(7, []byte("g"), 1)
	if r.n != 5 || r.bytes != 4 {
		t.Fatalf("held %d replies, %d bytes; want 5, 4", r.n, r.bytes)
	}
	if _, ok := r.next(1); ok {
		t.Fatal("reply 1 was never held")
	}
	var got string
	seq := uint64(2)
	for {
		h, ok := r.next(seq)
		if !ok {
			break
		}
		got += string(h.b) + "|"
		seq += uint64(h.n)
	}
	if got != "bc||e|" || seq != 6 {
		t.Fatalf("got %q up to %d; want \"bc||e|\" up to 6", got, seq)
	}
	r.add(6, []byte("f"), 1)
	for _, want := range []string{"f", "g"} {
		h, ok := r.next(seq)
		if !ok || string(h.b) != want {
			t.Fatalf("reply %d: %q %v, want %q", seq, h.b, ok, want)
		}
		seq++
	}
	if r.n != 0 || r.bytes != 0 || r.head != 0 || len(r.items) != 0 {
		t.Fatalf("not empty after the last: %+v", r)
	}
	r.add(9, []byte("i"), 1)
	if r.drop() != 1 || r.n != 0 {
		t.Fatal("drop did not count or forget the held reply")
	}
}
