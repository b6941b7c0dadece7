// Package proxy is lockproxy's sessions: it accepts RESP clients,
// multiplexes their commands onto a few shared upstream connections to
// Valkey, and moves a client onto a connection of its own only when it needs
// state that cannot be shared (MULTI, blocking commands, SUBSCRIBE, ...).
// Bytes are forwarded as received: a command is parsed only far enough to
// route it, a reply framed only far enough to hand it to its client.
//
// It owns, for each session:
//   - handling a command (handle.go), from the kinds of package commands'
//     table (which table is in force: cmdtable.go), and the step it returns
//     when something must wait (step.go; carried out by session_loop.go on
//     an event loop, in place on a goroutine of the session's own);
//   - the state Valkey would keep for the connection (connstate.go, the
//     CLIENT commands in clients.go and tracking.go, logins.go, pause.go);
//   - which upstream connection carries a command (pool.go's pool key;
//     cluster_route.go and the cluster_*.go files in front of a cluster;
//     busy.go and busyscript.go for a busy Valkey; wait.go for WAIT) and
//     the replies in command order (deliver.go, aside.go);
//   - carrying out a lock plan (lockplan.go, durable.go, execshape.go,
//     typegate.go);
//   - the replies it gives itself and its error texts (errors.go);
//   - the per-command accounting: each reply owed carries its command's
//     mark, taken as the reply reaches the output, which counts it, times
//     it and feeds the slow log (cmdstats.go).
//
// The other rooms, and this package's side of each seam:
//   - upstream: the connections to Valkey; a session is an upstream.Sink,
//     the proxy its Host (uphost.go) and the filler of its Connector
//     (updial.go); a Sentinel failover's effect on sessions is sentinel.go.
//   - evloop: the event loops; a session is an evloop.Client (loopclient.go).
//   - replies: a client's held replies and output queue.
//   - cluster: the slot map, splitting and folding, the face's answers,
//     redirects (cluster.Host in cluster.go, cluster.ShardClient in
//     cluster_shard_follow.go).
//   - clients: CLIENT LIST/INFO/KILL, ids, names, tracking's options and
//     relays, subscriptions, logins (clients.Client in clientview.go).
//   - locks: what a plan's reply means, grants, the epoch, durable undo
//     (locks.Host and locks.Client in lockhost.go; epoch.go,
//     cluster_epoch.go).
//   - admin: the LOCKPROXY subcommands, lock records, the HTTP endpoints,
//     CheckUpstream (admin.Host in adminhost.go; admin.go decides when a
//     LOCKPROXY command is answered; reload.go applies a configuration).
//   - telemetry: counters, histograms, events, the audit file and the
//     counter table, read from the telemetry.Numbers filled in numbers.go
//     (ops.go holds the counters a session increments).
//   - config (the file and process settings, TLS built in tlsconfig.go's
//     reload), policy (lock rules), rewrite (a command in, a plan out),
//     resp (the codec), commands (the command table).
//
// It must not decide what a command does to a lock: package rewrite turns a
// command into a Plan, which this package carries out, and who holds a lock
// is decided by the scripts inside Valkey. Nothing on an event loop may wait
// for Valkey: handling a command returns the step that waits instead, and
// the engine carries it out. The error texts this package writes are in
// errors.go (TestErrorTextsOnlyInCatalogue keeps them there,
// TestErrorCatalogueCodeWords checks their code words); refusals by a lock
// rule come worded from package rewrite (STALE from its fence script, in
// Valkey), NOTDURABLE from package locks, and errors Valkey writes are
// forwarded untouched.
package proxy
