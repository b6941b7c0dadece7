// Package commands is lockproxy's command table: what the proxy knows of
// each command name beyond what Valkey's key specs say.
//
// It owns, for a command name in any letter case:
//   - its Kind: how a session must treat it to keep every client's
//     connection state exact while most commands share upstream
//     connections (forwarded, its own connection, a stream of replies, a
//     byte pipe, connection state the proxy keeps, the proxy's own
//     commands); CLIENT's subcommands have theirs (ClientKind);
//   - its Family, the label of the per-family metrics, derived from the
//     kind (a lock rule makes it FamLock);
//   - its Label, the label of the per-command-name metrics: Valkey's
//     top-level names and LOCKPROXY, any other name LabelUnknown
//     (label.go);
//   - its Flags, the families the proxy decides alike beyond the kind
//     (script calls, the cluster face, shard channels, the split and
//     one-server families in front of a cluster);
//   - its ID, for the commands the proxy treats one by one (a
//     transaction's steps, the cluster face's answers, ...), and with its
//     first argument its Sub, for the subcommands it treats one by one
//     (SCRIPT KILL, CLIENT PAUSE, ...), under Valkey's own names;
//   - whether it may block on the server and for how long it asked
//     (Table.BlockingWait), and whether it has subcommands;
//   - whether it reconfigures Valkey (Table.Gated, by name and
//     subcommand: Valkey's "admin" flag, but for the exemptions written
//     out in gate.go), which admin_commands gates.
//
// The blocking commands, the subscribe family, the containers and the
// gated commands are derived from Valkey's own command table (FromTable,
// over a keyspec.Table), so that a command of a newer server or of a
// module is treated right the day the server offers it; until one is
// loaded, and when Valkey cannot be reached, Fallback says what
// valkey-server 8 and redis-server 7.0 say, written out in one file
// (fallback.go). What the proxy handles by name, which no flag describes,
// is on top of either.
// Lookups do not allocate; a Table is immutable.
//
// It must not do I/O, know sessions, connections, locks or the proxy's
// state: loading Valkey's table and choosing which Table is in force is
// package proxy's (cmdtable.go). Which arguments are keys and what a
// command does to them is package keyspec's.
package commands
