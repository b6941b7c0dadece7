package upstream

import (
	"log/slog"
	"sync"
	"time"
)

// The seams between a connection and the rest of the proxy: what a
// connection needs from whoever waits for its replies (a Sink; an Owner for
// a dedicated connection), from the proxy (Host) and from the event loop
// that reads it (Poller). The connection reaches the proxy through these
// only.

// Sink is whoever waits for the replies to the commands it queued on a
// connection: a session.
type Sink interface {
	// Deliver hands over n consecutive replies in b, numbered seq on (b
	// is empty for replies the client asked not to get).
	Deliver(seq uint64, b []byte, n int)
	// DeliverCork is Deliver with the bytes queued but not written and
	// not counted as given: it returns how many replies reached the
	// output, for Uncork.
	DeliverCork(seq uint64, b []byte, n int) int
	// Uncork writes what DeliverCork queued and counts done replies as
	// given.
	Uncork(done int)
	// Redirect follows the cluster redirect fr, which the command of p got
	// from the node from, off the reader, and delivers the reply the
	// client gets in its place. Only for a Pend with a Route.
	Redirect(p Pend, fr []byte, from string)
	// Alone reports whether one command of the sink's is in flight (a
	// NOSCRIPT retry must not overtake another).
	Alone() bool
}

// Owner is the one session of a dedicated connection.
type Owner interface {
	Sink
	// Push takes a frame that answers no command (a RESP3 push, or
	// anything on a connection in stream mode).
	Push(b []byte)
	// PushAfter is Push for a push that came on c after the replies c
	// handed the owner before it (Conn.LastDelivered).
	PushAfter(c *Conn, b []byte)
	// InputEnded reports whether the client half-closed its connection.
	InputEnded() bool
	// Lost is told that c died of err (told: commands in flight got the
	// error as their reply).
	Lost(c *Conn, err error, told bool)
}

// Poller is the event loop that reads a shared connection (Conn.Attach).
type Poller interface {
	// CorkList is where dispatch lists the sinks it corked replies for:
	// the loop writes them at the end of its round (UncorkAll).
	CorkList() *[]Touched
	// Detach stops reading the failed c and closes it (Conn.CloseSocket).
	// Called once, from any goroutine.
	Detach(c *Conn)
	// Queued notes that the loop's round queued commands on c, to be
	// written at the end of the round (Conn.Uncork).
	Queued(c *Conn)
}

// Host is what a connection needs from the proxy. It is filled in once,
// before the first connection opens, and only read after.
type Host struct {
	WG  *sync.WaitGroup // the connections' reader and writer goroutines
	Log *slog.Logger
	// ReplyTimeout bounds the wait for a reply (upstream.reply_timeout).
	ReplyTimeout time.Duration
	// Cork: replies are corked per batch (in front of a cluster).
	Cork bool
	// RoundTrip records the round trips of replies just read
	// (Pend.Sent to now).
	RoundTrip func(ps []Pend)
	// Failed counts a connection's death, and the commands it failed.
	Failed func(addr string, err error, cmds int)
	// LostText is the error the commands in flight on a dead connection
	// get; dedicated: the connection was a session's own.
	LostText func(addr string, err error, dedicated bool) string
	// EvalFromSHA is the EVAL a NOSCRIPT'd EVALSHA of the proxy's own
	// script is sent again as (nil: not one); ScriptFlushed is the error
	// reply when it cannot be.
	EvalFromSHA   func(evalsha []byte) []byte
	ScriptFlushed []byte
}
