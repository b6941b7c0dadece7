package proxy

import (
	"log/slog"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// The seams between an upstream connection and the rest of the proxy: what
// a connection needs from whoever waits for its replies (a replySink, a
// connOwner for a dedicated connection), from the proxy (upHost) and from
// the event loop that reads it (poller). The connection code reaches the
// proxy through these only.

// replySink is whoever waits for the replies to the commands it queued on
// an upstream connection: a session.
type replySink interface {
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
	// client gets in its place.
	Redirect(p pend, fr []byte, from string)
	// Alone reports whether one command of the sink's is in flight (a
	// NOSCRIPT retry must not overtake another).
	Alone() bool
}

// connOwner is the one session of a dedicated connection.
type connOwner interface {
	replySink
	// Push takes a frame that answers no command (a RESP3 push, or
	// anything on a connection in stream mode).
	Push(b []byte)
	// PushAfter is Push for a push that came on c after the replies c
	// handed the owner before it (c.lastDelivered).
	PushAfter(c *upConn, b []byte)
	// InputEnded reports whether the client half-closed its connection.
	InputEnded() bool
	// Lost is told that c died of err (told: commands in flight got the
	// error as their reply).
	Lost(c *upConn, err error, told bool)
}

// poller is the event loop that reads a shared connection.
type poller interface {
	// CorkList is where dispatch lists the sinks it corked replies for:
	// the loop writes them at the end of its round (uncorkAll).
	CorkList() *[]touched
	// Detach stops reading the failed c and closes it. Called once, from
	// any goroutine.
	Detach(c *upConn)
	// Queued notes that the loop's round queued commands on c, to be
	// written at the end of the round (upConn.uncork).
	Queued(c *upConn)
}

// upHost is what an upstream connection needs from the proxy. It is set
// once, before the first connection opens, and read only after.
type upHost struct {
	wg  *sync.WaitGroup // the connections' reader and writer goroutines
	log *slog.Logger
	// replyTimeout bounds the wait for a reply (upstream.reply_timeout).
	replyTimeout time.Duration
	// cork: replies are corked per batch (in front of a cluster).
	cork bool
	// roundTrip records the round trips of replies just read.
	roundTrip func(ps []pend)
	// failed counts a connection's death, and the commands it failed.
	failed func(addr string, err error, cmds int)
	// lostText is the error the commands in flight on a dead connection
	// get; dedicated: the connection was a session's own.
	lostText func(addr string, err error, dedicated bool) string
	// evalFromSHA is the EVAL a NOSCRIPT'd EVALSHA of the proxy's own
	// script is sent again as (nil: not one); scriptFlushed is the error
	// reply when it cannot be.
	evalFromSHA   func(evalsha []byte) []byte
	scriptFlushed []byte
}

// newUpHost is the proxy as its upstream connections see it. Set before
// the first connection opens; p.cl is set then too (New: a cluster exactly
// when seeds are given).
func (p *Proxy) newUpHost() upHost {
	return upHost{
		wg:           &p.wg,
		log:          p.log,
		replyTimeout: p.opts.Upstream.ReplyTimeout.D(),
		cork:         len(p.opts.Upstream.Cluster.Seeds) > 0,
		roundTrip:    p.ops.roundTrip.record,
		failed: func(addr string, err error, cmds int) {
			p.countUpstreamError(addr, err)
			p.ops.upFailedCmds.Add(int64(cmds))
		},
		lostText: func(addr string, err error, dedicated bool) string {
			if dedicated {
				return errDedicatedLost(addr, err)
			}
			return errUpstreamLost(addr, err)
		},
		evalFromSHA:   evalFromSHA,
		scriptFlushed: resp.AppendError(nil, errScriptFlushed),
	}
}
