// Package rewrite decides what lockproxy does with a command that touches a
// lock key: forward it, replace it with one of lockproxy's scripts, or
// refuse it — and, once the reply is known, folds the script's reply back
// into the command's own (Fold).
//
// Who holds a lock is not decided here: the scripts decide it inside
// Valkey, from the owner records kept beside each lock (see scripts.go). A
// command and the client's owner identity go in, a Plan comes out — what
// to send upstream, how to shape the reply, and what to record once it is
// known. No I/O happens here, so every decision is table-tested without a
// socket, and every script it sends is run offline by package luaeval and
// against a real Valkey in tests. The one piece of shared state a decision
// touches is the script cache (Decider.Scripts): EVAL and SCRIPT LOAD
// bodies and FUNCTION LOAD libraries passing through are learned, so that
// a later EVALSHA or FCALL of them is judged.
package rewrite
