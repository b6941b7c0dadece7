// Package upstream owns lockproxy's connections to Valkey.
//
// A Conn is one connection once it is set up: the queue of commands
// waiting for their replies (Pend), the batched writes (Send, the writer
// goroutine, direct writes that never block), the reader that frames
// replies and hands each to whoever waits for it (a Sink) in the order the
// commands were written, the reply deadline, stream mode for a dedicated
// connection (SUBSCRIBE, MONITOR, SYNC), the NOSCRIPT retry of the proxy's
// own scripts, and its death: every command still waiting gets an error
// reply, once.
//
// Before a Conn: a Target says where a new connection goes (the
// configured address, the primary Sentinel names now, any node of a
// cluster: target.go) and how the upstream is named in messages; a Dialer
// opens the socket (TCP and TLS under one deadline, a TLS failure named in
// the operator's terms: SetupError), and Handshake makes it equal to a
// session's State (login, database, name, scripts, tracking) in one write.
// A Connector puts these together for the proxy (connector.go: Connect,
// Start, Dial), with the proxy's handshake, what it learns on a new
// connection and the event loop that reads a shared one given as
// functions; it checks the upstream's health (Check: connect, PING and
// the rights lockproxy needs, rights.go; Verdict: a recent one reused, a
// check run in the background and waited for at most Health.Wait). A
// connection's whole set-up (Sentinel's lookup, dial, TLS, handshake, the
// diagnosis of a failure) runs under one deadline, Connector.Wait (the
// proxy's reply_timeout): no client waits past it. Classify turns the error of any of this
// into a Verdict: the reason word of lockproxy_upstream_up and /readyz,
// and the setting to fix; Health keeps the last one, logs its changes and
// counts failures by reason. A Pool keeps a set of shared connections and
// their spares, dialled with the proxy's dial function (PoolConfig.Dial),
// backing off after a failed dial; Pools keeps the proxy's pools by its
// key (generic: the key is the proxy's type). Plains keeps idle
// request-reply connections for the paths that may wait (plain.go).
// Sentinel finds the primary of a master and follows its failovers.
//
// It reaches the rest of the proxy only through the seams in seams.go: a
// Sink (a session: Deliver, Redirect, ...), an Owner (the session of a
// dedicated connection), a Host (goroutine group, logger, reply timeout,
// counters, the error texts) and a Poller (the event loop that reads a
// shared connection); and through the functions a Connector, a Pool,
// Pools or Plains is given, and Target's Nodes (the cluster's view). A
// Pend's Route and Fam are the proxy's values, carried here and never
// read.
//
// It must not import package proxy, decide what a command does (the proxy
// decides, and queues the bytes to send with what to do with each reply),
// word a client-visible error itself (Host.LostText, Host.ScriptFlushed),
// or wait for Valkey on an event loop: a loop-read connection is read only
// when the loop saw it ready (ReadReady), and its reply deadline is a
// timer. Nor must it know the lock rules or the clients' logins: what
// every connection of a pool key is told (the proxy's credentials or a
// client's login), what is learnt on a new connection (the primary's
// epoch), and what a failover does to the sessions are the proxy's
// (updial.go, pool.go, sentinel.go there). The TLS configuration it dials
// with is built by package config from the settings' files.
package upstream
