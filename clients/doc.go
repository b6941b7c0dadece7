// Package clients is the state lockproxy keeps for its clients because
// they share upstream connections: what Valkey would keep for a client on a
// connection of its own, and would show or act on, the proxy keeps and
// shows itself.
//
// It owns the translation of client ids between the proxy's (a session's)
// and Valkey's (its own connection's, or a tracking relay's): CLIENT
// UNBLOCK's argument, GETREDIR's and TRACKINGINFO's answers, the
// tracking-redir-broken push (ToValkeyIDs, IDs). It owns a client's subscriptions as the client sees them
// (Subscriptions: channels, patterns and shard channels), the registry of the logins Valkey accepted for clients (Logins:
// what a pool needs to log its connections in as a client's user) and the
// limit on failed LOCKPROXY AUTH attempts per client address (AuthLimiter),
// and which MONITOR lines are the proxy's own connection set-up, left out of
// what its monitoring clients see (OwnLines).
//
// It must not import package proxy or reach into its sessions: what it
// needs of a session comes in as values or through the small interfaces it
// declares.
package clients
