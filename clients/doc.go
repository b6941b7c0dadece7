// Package clients is the state lockproxy keeps for its clients because
// they share upstream connections: what Valkey would keep, show or act on
// for a client on a connection of its own, the proxy keeps, shows and acts
// on itself, in Valkey's words.
//
// It owns, as pure values with table tests:
//   - CLIENT LIST, INFO and KILL: the state a client publishes (Snap, its
//     Flags and type), the line in Valkey 8's fields and order
//     (AppendLine), LIST's filters (List) and KILL's (Kill: the address
//     form, the filters read in Valkey's order, SKIPME), and the last
//     command's name as CLIENT LIST shows it (Intern);
//   - a client's name and library info as Valkey accepts them
//     (NameError, SetInfo);
//   - client ids both ways between the proxy's (a session's) and Valkey's
//     (its own connection's, or a tracking relay's): CLIENT UNBLOCK's
//     argument, GETREDIR's and TRACKINGINFO's answers, the
//     tracking-redir-broken push (ToValkeyIDs, IDs), HELLO's id field
//     (HelloID);
//   - CLIENT TRACKING's options (TrackingRedirect, TrackingHas), the
//     command each of a client's connections is told (TrackingCommand),
//     and an invalidation as the redirect target gets it (Invalidation);
//   - a client's subscriptions as it sees them (Subscriptions);
//   - the logins Valkey accepted for clients (Logins: what a pool needs to
//     log its connections in as a client's user);
//   - the limit on failed LOCKPROXY AUTH attempts per client address
//     (AuthLimiter);
//   - which MONITOR lines are the proxy's own connection set-up, left out
//     of what its monitoring clients see (OwnLines).
//
// With connections the session opened: a client's tracking state
// (Tracking: its options, its own connection per node, its relays, the
// commands held for the next node), a client as a REDIRECT target
// (Target: its id, how an invalidation reaches it, the relays shared by
// the clients redirecting to it, closed when it quits), and asking a new
// connection its CLIENT ID (AskID); tested against a real valkey-server
// (internal/valkeytest).
//
// The seams: a session is a Client (its published Snap, its connection
// read now, Abort), through a small adapter of package proxy
// (proxy/clientview.go), and a Target with the delivery of its
// invalidations filled in when it connects; whether Valkey knows a user
// CLIENT KILL USER names is asked through UserKnown, and a client id
// translated through a lookup function (ToValkeyIDs). The client-visible
// error texts it writes are in errors.go (TestErrorTextsOnlyInCatalogue,
// TestErrorCatalogueCodeWords), each Valkey's own.
//
// It must not import package proxy or reach into its sessions, dial
// Valkey, or decide what a command does to a connection: which commands
// change a client's state, which connection a session uses, what moves it
// to a connection of its own, and CLIENT TRACKING's connections per node
// are package proxy's.
package clients
