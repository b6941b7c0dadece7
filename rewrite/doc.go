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
// against a real Valkey in tests. Two pieces of shared state are touched:
// the script cache (Decider.Scripts), in which EVAL and SCRIPT LOAD bodies
// passing through are learned, so that a later EVALSHA of them runs
// monitored; and the monitored texts made for a client's script, one per
// script and shape, kept up to a bound (wrap.go). The lock libraries'
// own script texts, known byte for byte (known.go), run lockproxy's
// equivalents instead of the monitor; those are run against a real Valkey
// only (e2e/known_test.go), not by luaeval. A function library is
// monitored inside itself (monitor_lib.go): nothing about it is kept here.
//
// It must not do I/O or keep who holds a lock: the lock state is Valkey's,
// and carrying a Plan out (sending, delivering the reply, recording the
// events) is package proxy's.
package rewrite
