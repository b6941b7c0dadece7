// Package proxy is lockproxy's network layer: it accepts RESP clients,
// multiplexes their commands onto a few shared upstream connections to Valkey,
// and moves a client onto a dedicated upstream connection only when the client
// needs connection state that cannot be shared (MULTI, blocking commands,
// SUBSCRIBE, AUTH sent on such a connection, ...).
//
// Bytes are forwarded as received: a command is parsed only far enough to
// route it, and a reply is framed only far enough to hand it to the client
// that asked for it. Decoding and re-encoding replies would cost most of the
// throughput (measured: pipelined throughput falls to 0.05 of direct).
//
// It owns the client sessions and the state Valkey would keep for each
// (connstate.go), what a session does when its event loop pumps it
// (session_loop.go: carrying out the steps, pausing, leaving the loop),
// which upstream connections a session uses (its pool key: protocol,
// database and login; the primary in front of a cluster) and what they are
// told at connect, what a Sentinel failover does to them, the replies the
// proxy gives itself (CLIENT ..., INFO lockproxy; of LOCKPROXY only when and
// where it is answered: admin.go), and the counters it increments (ops.go)
// with the snapshot of them package telemetry's counter table reads
// (numbers.go). In front of a
// cluster it owns which node a session's command goes to (cluster_route.go),
// what a session's own connection allows there, when a command is split,
// fanned out or refused (the command table's families), the face's
// gatekeeping and the connections to the nodes (cluster_conn.go); package
// cluster owns the slot map and keeping it current, splitting and folding,
// SCAN's cursor, the face's answers, following redirects and sharded
// subscribers: its View asks the nodes through nodeDo (cluster.Host,
// cluster.go) and sees a session as a cluster.ShardClient (shardClient,
// cluster_shard_follow.go). Package upstream owns the connections
// themselves: where they go (the address, Sentinel's primary, a cluster
// node), dialling, the handshake, the pools by key, the health verdict and
// its counters, Sentinel's answers, and a connection once it is open
// (queueing, writing, reading and handing out replies, the reply deadline,
// its death): a session is its upstream.Sink, the proxy its upstream.Host
// (uphost.go), the filler of its upstream.Connector (updial.go: the
// handshake's scripts, the epoch learnt, the event loop) and the pools'
// configuration (pool.go: the pool key, what each connection of a key is
// told, the dial counters), an event loop its upstream.Poller; what a
// Sentinel failover does to the sessions is here (sentinel.go). Package
// config builds the TLS configurations from their files; which is in use,
// and swapping it on a reload, is here (tlsconfig.go). Check-config's
// trial of the upstream is package admin's (CheckUpstream), given where
// and how the proxy connects and its Serve (checkupstream.go). Package
// evloop owns the event loops themselves: epoll, the rounds, corking the upstream
// writes of a round, wake-ups, the idle sweep and reading a client's
// socket once per readiness; it sees a session as an evloop.Client
// (loopclient.go) and the proxy's loops are an evloop.Group. Package
// replies owns a client's output on its way out: the replies held until
// their turn and the chunked queue for the socket (deliver.go decides what
// goes there, writes it and enforces the output limit). Package
// telemetry owns the counter structs (with what a lock effect adds to
// them), histograms, lock events, the audit file and the counter table:
// its rows (every reported number's names and what it reads of a
// telemetry.Numbers) and rendering INFO lockproxy, LOCKPROXY STATS and
// /metrics from them. INFO's text goes out as resp.AppendText encodes it. Package admin
// owns the LOCKPROXY subcommands, the admin logins, reading the lock
// records and their index, the configuration in force and what a reload
// changed, and the HTTP endpoints: the proxy is its admin.Host and a
// session its admin.Conn (adminhost.go); Reload applies a configuration
// (reload.go) and admin.Running records it. Package locks owns the lock glue: what a plan's effects
// mean for the counters and events, a session's grants and a lost one,
// the epoch memory and learning it on a new connection, a durable
// command's WAIT, answer and undo, and a plan's script call: the proxy is
// its locks.Host and a session its locks.Client (lockhost.go); what is
// sent, on which connection and when stays here (lockplan.go, durable.go).
// Package clients owns what is
// shown and checked of a client's state without its session: CLIENT LIST,
// INFO and KILL's lines and filters, names, client ids both ways, CLIENT
// TRACKING's options and relays, subscriptions, the logins Valkey
// accepted, the LOCKPROXY AUTH limit and MONITOR's own lines; a session is
// its clients.Client (clientview.go), and which command changes that
// state, and on which connection, stays here (connstate.go, clients.go,
// tracking.go).
//
// It must not decide what a command does to a lock: package rewrite turns a
// command into a Plan, which this package carries out, and who holds a lock
// is decided by the scripts inside Valkey. Configuration is package
// config's, the lock rules package policy's, RESP parsing package resp's,
// cluster knowledge package cluster's. Nothing on an event loop may wait for
// Valkey: handling a command returns the step that waits instead (step.go),
// and the engine carries it out.
//
// What the proxy decides about a command's connection state lives in
// handle.go, from the kinds, families, flags and ids of package commands
// (the command table); which table is in force, Valkey's once loaded or the
// fallback, is cmdtable.go's. The error texts this
// package writes are in errors.go (TestErrorTextsOnlyInCatalogue keeps
// them there, and TestErrorCatalogueCodeWords checks their code words);
// refusals by a lock rule come worded from package rewrite (STALE from its
// fence script, in Valkey), a durable command's NOTDURABLE from package
// locks, and errors Valkey writes are forwarded untouched.
package proxy
