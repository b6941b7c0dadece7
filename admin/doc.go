// Package admin owns lockproxy's own admin commands and its operator
// surface: the LOCKPROXY subcommand table (AUDIT, AUTH, CHECK, CONFIG,
// FENCE, HELP, LOCKS, REINDEX, RELOAD, SESSIONS, STATS) with each
// subcommand's arguments, who may run it and its answer (table.go and one
// file per concern); the admin logins (admin.password, admin.users) and
// who may run what (logins.go, access.go); reading the locks as Valkey
// records them through the locks' index, and keeping that index whole
// (locks.go, index.go, servers.go); the reply records and their encoding
// for RESP2 and RESP3 (field.go); the configuration in force, flattened
// and redacted, what a reload changed and what needs a restart (config.go,
// running.go); the HTTP endpoints /metrics, /livez, /healthz and
// /readyz (http.go); and check-config's trial of what lockproxy needs of
// Valkey (CheckUpstream: the connection, COMMAND, SCRIPT LOAD, each lock
// rule's cycle through the proxy and its index, naming the ACL rights
// missing; checkupstream.go). The error texts it writes are in errors.go, each
// starting with its code word (TestErrorTextsOnlyInCatalogue,
// TestErrorCatalogueCodeWords).
//
// It sees the proxy only through its seams (host.go): Host, what it needs
// from the proxy (the rules in force, lock events, the counter table's
// lines, the sessions, the clients of the servers that hold lock records,
// Reload), implemented in proxy/adminhost.go; Conn, the client connection
// that asked (its id, database, protocol and owner identity); Limiter,
// the failed-login limit; Probes, the answers the HTTP endpoints give;
// Upstream, where and how the proxy connects and its Serve, for
// CheckUpstream.
//
// It must not import package proxy nor reach into its structs, and must
// not decide anything about a client's connection: whether an answer waits
// for replies the client is owed, runs off an event loop or refuses inside
// MULTI is the proxy's (proxy/admin.go), as is applying a reload (its
// rules, logins and log level) and the counter table's rows. It decides no
// lock: CHECK asks package rewrite's Decider, and who holds a lock is
// Valkey's records. It writes to Valkey only the locks' index, and
// CheckUpstream's probe: one key per rule through the proxy, removed at
// once (10 s at most), and SCRIPT LOAD of lockproxy's scripts.
package admin
