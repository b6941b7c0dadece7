// Package evloop owns lockproxy's event loops: the engine that serves many
// client connections, and the shared upstream connections they use, from
// one goroutine per loop.
//
// A Loop asks epoll which sockets are readable, in rounds: it reads the
// upstream connections that are ready first (upstream.Conn.ReadReady hands
// each reply to its client), writes the replies corked in the round
// (upstream.UncorkAll), then pumps each ready client once (Client.Pump,
// which reads its socket at most once through its Member), then the
// clients resumed from other goroutines (Loop.Resume, Loop.Wake), and
// writes what the round queued on each upstream connection in one batch
// (Loop.Uncork). At most 256 sockets are taken per round; the rest are the
// next round's. Its epoll descriptor is registered with Go's poller, so an
// idle loop parks like any goroutine (busy_poll: after polling that long).
// It drops clients that idled past client_idle_timeout (the sweep), and
// clients that hung up while paused. A Group is the process's loops,
// started with the first client, handing out clients and upstream
// connections in turn.
//
// It sees a client only through the Client interface (Pump, Paused,
// ReadingOn, Idle, Drop: the proxy's session, proxy/loopclient.go) and its
// Member, the loop's record of the client that the client keeps; and an
// upstream connection through package upstream's Conn, for which a Loop is
// the upstream.Poller (CorkList, Detach, Queued).
//
// It must not know what a command is, what a client's session holds, or
// anything of Valkey: it moves readiness, not bytes (a client's bytes go
// from its Member to the client's own reader; replies are upstream's and
// the session's to deliver). Nothing it does or calls may wait: a Client's
// methods are called on the loop's goroutine and must return without
// waiting for I/O or another goroutine (a client that must wait turns its
// reading off, Loop.Reading, or leaves the loop, Loop.Remove). Event loops
// need Linux (epoll); elsewhere New fails and a Group gives no loop.
package evloop
