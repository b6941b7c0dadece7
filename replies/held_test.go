package replies

import "testing"

// Replies held out of order come out in sequence, runs included, and the
// counts follow.
func TestHeld(t *testing.T) {
	var r Held
	r.Add(5, []byte("e"), 1)
	r.Add(2, []byte("bc"), 2) // replies 2 and 3
	r.Add(4, nil, 1)          // a muted one
	r.Add(7, []byte("g"), 1)
	if r.n != 5 || r.bytes != 4 {
		t.Fatalf("held %d replies, %d bytes; want 5, 4", r.n, r.bytes)
	}
	if _, ok := r.Next(1); ok {
		t.Fatal("reply 1 was never held")
	}
	var got string
	seq := uint64(2)
	for {
		h, ok := r.Next(seq)
		if !ok {
			break
		}
		got += string(h.B) + "|"
		seq += uint64(h.N)
	}
	if got != "bc||e|" || seq != 6 {
		t.Fatalf("got %q up to %d; want \"bc||e|\" up to 6", got, seq)
	}
	r.Add(6, []byte("f"), 1)
	for _, want := range []string{"f", "g"} {
		h, ok := r.Next(seq)
		if !ok || string(h.B) != want {
			t.Fatalf("reply %d: %q %v, want %q", seq, h.B, ok, want)
		}
		seq++
	}
	if r.n != 0 || r.bytes != 0 || r.head != 0 || len(r.items) != 0 {
		t.Fatalf("not empty after the last: %+v", r)
	}
	r.Add(9, []byte("i"), 1)
	if r.Drop() != 1 || r.n != 0 {
		t.Fatal("Drop did not count or forget the held reply")
	}
}
