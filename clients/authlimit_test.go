package clients

import (
	"fmt"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func testLimiter(limit, max int) (*AuthLimiter, *fakeClock) {
	c := &fakeClock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	l := NewAuthLimiter()
	l.now, l.limit, l.max = c.now, limit, max
	return l, c
}

func TestAuthLimiterWindow(t *testing.T) {
	l, c := testLimiter(3, 100)
	for i := 1; i <= 3; i++ {
		if w := l.Blocked("10.0.0.1"); w != 0 {
			t.Fatalf("blocked %v before failure %d", w, i)
		}
		if reached := l.Failed("10.0.0.1"); reached != (i == 3) {
			t.Fatalf("failure %d: reached %v", i, reached)
		}
		c.t = c.t.Add(10 * time.Second)
	}
	// Three failures in the minute that began at 12:00:00; it is 12:00:30.
	if w := l.Blocked("10.0.0.1"); w != 30*time.Second {
		t.Fatalf("blocked %v, want the 30s left of the window", w)
	}
	if w := l.Blocked("10.0.0.2"); w != 0 {
		t.Fatalf("another address blocked %v", w)
	}
	c.t = c.t.Add(29 * time.Second)
	if w := l.Blocked("10.0.0.1"); w != time.Second {
		t.Fatalf("blocked %v one second before the window ends", w)
	}
	c.t = c.t.Add(time.Second)
	if w := l.Blocked("10.0.0.1"); w != 0 {
		t.Fatalf("blocked %v once the window is over", w)
	}
	// A new window starts with the next failure, counted from one.
	if l.Failed("10.0.0.1") || l.Failed("10.0.0.1") {
		t.Fatal("limit reached after two failures of a new window")
	}
	if w := l.Blocked("10.0.0.1"); w != 0 {
		t.Fatalf("blocked %v after two failures", w)
	}
}

// The addresses remembered are bounded: past the bound, windows that are
// over go first, then the oldest.
func TestAuthLimiterBounded(t *testing.T) {
	l, c := testLimiter(1, 4)
	for i := range 3 {
		l.Failed(fmt.Sprintf("10.0.0.%d", i))
	}
	c.t = c.t.Add(2 * time.Minute) // those three windows are over
	for i := range 10 {
		l.Failed(fmt.Sprintf("10.0.1.%d", i))
		c.t = c.t.Add(time.Second)
		if len(l.addrs) > 4 {
			t.Fatalf("%d addresses remembered, bound 4", len(l.addrs))
		}
	}
	// The newest four are still blocked; the oldest were forgotten.
	for i := range 10 {
		w := l.Blocked(fmt.Sprintf("10.0.1.%d", i))
		if (w > 0) != (i >= 6) {
			t.Errorf("10.0.1.%d blocked %v", i, w)
		}
	}
}
