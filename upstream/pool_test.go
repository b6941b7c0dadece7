package upstream

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
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

// TestPools: a pool per key, made with its key's configuration when first
// asked for; the shared connections of all counted and failed together;
// CloseAll closes them and forgets the pools. Against a real valkey-server.
func TestPools(t *testing.T) {
	srv := valkeytest.Start(t)
	var log bytes.Buffer
	learnt, attached := 0, 0
	k := connector(srv.Addr, &log, &learnt, &attached)
	var made []int
	var ps Pools[int]
	ps.Config = func(db int) PoolConfig {
		made = append(made, db)
		return PoolConfig{Size: 2, Backoff: time.Hour, MaxBackoff: time.Hour,
			Closed: func() bool { return false }, Failed: func(error, time.Duration) {},
			Dial: func(spare bool) (*Conn, error) { return k.Dial(State{Proto: 2, DB: db, Bare: spare}, nil) }}
	}
	for _, ask := range []struct{ db, slot int }{{0, 0}, {1, 0}, {0, 1}, {0, 0}} {
		if _, err := ps.Get(ask.db).Conn(ask.slot); err != nil {
			t.Fatal(err)
		}
	}
	if len(made) != 2 || ps.Get(1) != ps.Get(1) {
		t.Fatalf("pools made for %v, want [0 1] once each", made)
	}
	if n := ps.Live(); n != 3 || len(ps.Shared()) != 3 {
		t.Fatalf("%d live connections, %d shared; want 3 (the slots asked for)", n, len(ps.Shared()))
	}
	conns := ps.Shared()
	ps.CloseAll()
	for _, c := range conns {
		if !c.Dead() {
			t.Error("a connection outlived CloseAll")
		}
	}
	if ps.Live() != 0 {
		t.Errorf("%d live connections after CloseAll", ps.Live())
	}
	ps.Get(0)
	if len(made) != 3 {
		t.Errorf("a pool asked for after CloseAll is a new one: made %v", made)
	}
}
