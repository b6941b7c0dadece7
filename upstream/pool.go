package upstream

import (
	"errors"
	"sync"
	"time"
)

// Pool is a set of interchangeable shared connections: one protocol,
// database, login and node (the proxy's pool key). A session is pinned to
// one slot (by its id) so its pipelined commands stay in order on one
// connection. A slot whose dial failed answers with that failure until its
// backoff ends, so a down Valkey costs clients an error, not a pile-up of
// dials.
type Pool struct {
	cfg   PoolConfig
	slots []slot
	// spares are the side connections sessions use while Valkey holds a
	// command back on their own slot's connection (Conn.Holds).
	spares [spares]slot
}

// spares is how many spare connections a pool may have.
const spares = 4

// PoolConfig is what a Pool needs from the proxy.
type PoolConfig struct {
	Size int // shared connections (upstream.pool_size)
	// Dial opens one connection and starts it; spare: a side
	// connection, set up bare (no scripts loaded: Valkey may be running
	// one, and would answer SCRIPT LOAD with BUSY).
	Dial func(spare bool) (*Conn, error)
	// Failed is told of a failed dial (not Valkey's answer to the
	// handshake, a *ReplyError, which is the client's) and how long the
	// slot answers with it.
	Failed func(err error, retryIn time.Duration)
	// Backoff is the first wait after a failed dial, doubled after each
	// other up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Closed reports whether the proxy is shutting down: no more dials.
	Closed func() bool
}

type slot struct {
	mu      sync.Mutex
	c       *Conn
	err     error     // the last dial failure
	retryAt time.Time // until then, the last failure is answered at once
	backoff time.Duration
}

// NewPool makes an empty pool: connections are dialled when first asked for.
func NewPool(cfg PoolConfig) *Pool {
	return &Pool{cfg: cfg, slots: make([]slot, cfg.Size)}
}

// Conn returns the live connection of slot i, dialling it if needed.
func (pl *Pool) Conn(i int) (*Conn, error) {
	return pl.slotConn(&pl.slots[i%len(pl.slots)], false)
}

// OpenSpares opens the pool's spare connections that are not open.
func (pl *Pool) OpenSpares() {
	for i := range pl.spares {
		_, _ = pl.slotConn(&pl.spares[i], true)
	}
}

// FreeSpare is an open spare connection where Valkey holds nothing back
// (with idle, where nothing at all is in flight) that claim took (no one
// else takes it until released), else nil. A spare claim took but that
// does not fit is given back with release.
func (pl *Pool) FreeSpare(idle bool, claim func(*Conn) bool, release func()) *Conn {
	for i := range pl.spares {
		sl := &pl.spares[i]
		if !sl.mu.TryLock() {
			continue
		}
		c := sl.c
		sl.mu.Unlock()
		if c == nil || c.Dead() || !claim(c) {
			continue
		}
		if !c.Holds() && (!idle || c.idle()) {
			return c
		}
		release()
	}
	return nil
}

// SparesOpen reports whether OpenSpares would dial nothing.
func (pl *Pool) SparesOpen() bool {
	for i := range pl.spares {
		if !pl.slotReady(&pl.spares[i]) {
			return false
		}
	}
	return true
}

func (pl *Pool) slotConn(sl *slot, spare bool) (*Conn, error) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.c != nil && !sl.c.Dead() {
		return sl.c, nil
	}
	if sl.err != nil && time.Now().Before(sl.retryAt) {
		return nil, sl.err
	}
	if pl.cfg.Closed() {
		return nil, ErrClosed
	}
	c, err := pl.cfg.Dial(spare)
	var re *ReplyError
	if errors.As(err, &re) {
		// Valkey's answer to the handshake (SELECT of a database it
		// does not have): the client's error, not a failure to connect.
		return nil, err
	}
	if err != nil {
		if sl.backoff == 0 {
			sl.backoff = pl.cfg.Backoff
		} else {
			sl.backoff = min(2*sl.backoff, pl.cfg.MaxBackoff)
		}
		sl.err = err
		sl.retryAt = time.Now().Add(sl.backoff)
		pl.cfg.Failed(err, sl.backoff)
		return nil, err
	}
	if spare {
		c.spareOf = pl
	}
	sl.c, sl.err, sl.backoff = c, nil, 0
	return c, nil
}

// Ready reports whether Conn(i) would answer without dialling: the slot
// has a live connection, or a dial failure still in its backoff. A slot
// being dialled by someone else is not ready.
func (pl *Pool) Ready(i int) bool {
	return pl.slotReady(&pl.slots[i%len(pl.slots)])
}

func (pl *Pool) slotReady(sl *slot) bool {
	if !sl.mu.TryLock() {
		return false
	}
	defer sl.mu.Unlock()
	return (sl.c != nil && !sl.c.Dead()) ||
		(sl.err != nil && time.Now().Before(sl.retryAt)) || pl.cfg.Closed()
}

// Shared is the pool's shared connections now (not the spares), live or
// dead.
func (pl *Pool) Shared() []*Conn {
	var cs []*Conn
	for i := range pl.slots {
		sl := &pl.slots[i]
		sl.mu.Lock()
		if sl.c != nil {
			cs = append(cs, sl.c)
		}
		sl.mu.Unlock()
	}
	return cs
}

// Live counts the pool's live shared connections (not the spares).
func (pl *Pool) Live() int {
	n := 0
	for _, c := range pl.Shared() {
		if !c.Dead() {
			n++
		}
	}
	return n
}

// CloseAll takes every connection out of the pool, spares too, and
// closes it.
func (pl *Pool) CloseAll() {
	for i := range len(pl.slots) + spares {
		sl := &pl.spares[max(i-len(pl.slots), 0)]
		if i < len(pl.slots) {
			sl = &pl.slots[i]
		}
		sl.mu.Lock()
		c := sl.c
		sl.c = nil
		sl.mu.Unlock()
		if c != nil {
			c.Close()
		}
	}
}
