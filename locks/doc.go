// Package locks is the lock glue: what lockproxy does around a lock
// plan once package rewrite has decided it, apart from moving its bytes.
//
// It owns:
//   - what a plan's effects mean once its reply is in (Keeper.Apply,
//     effects.go): the counters, the events and the audit, by outcome;
//     a fence's STALE refusal, its token read from the error;
//   - a session's grants and telling a lost one (Grants, grants.go): a
//     grant under an older epoch that Valkey no longer has a record of;
//   - the epoch memory (epoch.go, epoch_cluster.go): the run id the
//     connections reach, the epochs seen in tokens and in the epoch
//     hashes, Sentinel's floor, a cluster node's restart, a flush, and
//     the clue (Keeper.Clue) the grants mint under; learning them on a
//     new connection with read-only commands (Keeper.Learn, LearnNode);
//   - durable commands (durable*.go): the WAIT that follows one, pairing
//     its reply with the command's and answering the client (the reply,
//     "not taken", NOTDURABLE), the undo scripts run off the reply path,
//     a transaction's durability (Txn);
//   - the encoding of a plan's script call (EncodeScript, EvalFromSHA for
//     the NOSCRIPT retry) and of the type gate (TypeGateCommand).
//
// It reaches the proxy only through Host (the undo scripts' connection,
// MONITOR's own commands, the counters and the event record) and sees a
// session as a Client (its address, name and Grants); both are
// implemented in proxy's lockhost.go. The proxy sends what the hooks here
// are for, on the connection and in the order it chooses.
//
// It must not decide what a command does to a lock (package rewrite
// does, and the scripts inside Valkey decide who holds it), send or queue
// bytes on a client's connection, import package proxy, or wait for
// Valkey on a reply hook: an undo runs on a goroutine of its own. Its
// client-visible error texts are in errors.go (TestErrorTextsOnlyInCatalogue,
// TestErrorCatalogueCodeWords).
package locks
