package upstream

import (
	"errors"
	"testing"
	"time"
)

// TestPoolDialFailures: a failed dial is answered at once until its backoff
// ends (a down Valkey costs clients an error, not a pile-up of dials), and
// counts as ready meanwhile; Valkey's answer to the handshake is the
// client's error, not a failure to back off from.
func TestPoolDialFailures(t *testing.T) {
	dials, failed := 0, 0
	var next error
	pl := NewPool(PoolConfig{
		Size:       2,
		Backoff:    time.Hour,
		MaxBackoff: time.Hour,
		Closed:     func() bool { return false },
		Failed:     func(error, time.Duration) { failed++ },
		Dial: func(bool) (*Conn, error) {
			dials++
			return nil, next
		},
	})
	next = &ReplyError{Msg: "ERR DB index is out of range"}
	if _, err := pl.Conn(0); !errors.As(err, new(*ReplyError)) {
		t.Fatalf("handshake refused: %v", err)
	}
	if pl.Ready(0) || failed != 0 {
		t.Fatalf("a refused handshake backs off: ready %v, failures %d", pl.Ready(0), failed)
	}
	refused := errors.New("connection refused")
	next = refused
	for range 3 {
		if _, err := pl.Conn(0); err != refused {
			t.Fatalf("dial failure: %v", err)
		}
	}
	if dials != 2 || failed != 1 {
		t.Fatalf("%d dials and %d failures for one refused dial and two asks in its backoff", dials, failed)
	}
	if !pl.Ready(0) || pl.Ready(1) {
		t.Fatalf("ready: slot 0 (backing off) %v, slot 1 (never dialled) %v", pl.Ready(0), pl.Ready(1))
	}
}
