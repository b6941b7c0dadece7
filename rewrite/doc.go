// Package rewrite decides what lockproxy does with a command that touches a
// lock key: forward it, replace it with a token-checked script, or refuse it.
//
// It is pure: a command and the session's view of its grants go in, a Plan
// comes out — what to send upstream, how to shape the reply, and what to
// record once the reply is known. No I/O happens here, so every decision is
// table-tested without a socket, and every script it sends is run offline by
// package luaeval and against a real Valkey in tests.
package rewrite
