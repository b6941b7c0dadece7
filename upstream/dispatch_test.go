package upstream

import (
	"testing"
)

// sinkRecorder is a Sink that keeps what it was handed, in order.
type sinkRecorder struct {
	got   []byte
	calls int
	n     int
}

func (r *sinkRecorder) Deliver(seq uint64, b []byte, n int) {
	r.got = append(r.got, b...)
	r.calls++
	r.n += n
}
func (r *sinkRecorder) DeliverCork(seq uint64, b []byte, n int) int {
	r.Deliver(seq, b, n)
	return n
}
func (r *sinkRecorder) Uncork(int)                    {}
func (r *sinkRecorder) Redirect(Pend, []byte, string) {}
func (r *sinkRecorder) Alone() bool                   { return true }

// TestDispatchRunsAndNoAlloc: dispatch hands a sink's consecutive replies
// over as one run, in order, and costs no allocation per batch of replies
// once its buffers have grown (it runs for every read from Valkey).
func TestDispatchRunsAndNoAlloc(t *testing.T) {
	c := &Conn{h: &Host{RoundTrip: func([]Pend) {}}}
	a, b := &sinkRecorder{}, &sinkRecorder{}
	buf := []byte("+A1\r\n+A2\r\n+B1\r\n+A3\r\n")
	frames := [][]byte{buf[0:5], buf[5:10], buf[10:15], buf[15:20]}
	sinks := []*sinkRecorder{a, a, b, a}
	var ps []Pend
	var corked []Touched
	round := func() {
		c.mu.Lock()
		for i, s := range sinks {
			c.q.push(Pend{Sink: s, Seq: uint64(i)})
		}
		c.mu.Unlock()
		if !c.dispatch(frames, &ps, &corked) {
			t.Fatal("dispatch failed")
		}
	}
	round()
	if string(a.got) != "+A1\r\n+A2\r\n+A3\r\n" || string(b.got) != "+B1\r\n" {
		t.Fatalf("a got %q, b got %q", a.got, b.got)
	}
	if a.calls != 2 || a.n != 3 {
		t.Fatalf("a: %d calls for %d replies, want 2 for 3 (A1 and A2 as one run)", a.calls, a.n)
	}
	a.got, b.got = make([]byte, 0, 1<<16), make([]byte, 0, 1<<16)
	if raceEnabled {
		return // the race detector allocates
	}
	if n := testing.AllocsPerRun(100, func() {
		a.got, b.got = a.got[:0], b.got[:0]
		round()
	}); n != 0 {
		t.Fatalf("dispatch allocates %v times per batch, want 0", n)
	}
}
