// Package proxy is lockproxy's network layer: it accepts RESP clients,
// multiplexes their commands onto a few shared upstream connections to Valkey,
// and moves a client onto a dedicated upstream connection only when the client
// needs connection state that cannot be shared (MULTI, blocking commands,
// SUBSCRIBE, per-user AUTH, ...).
//
// Bytes are forwarded as received: a command is parsed only far enough to
// route it, and a reply is framed only far enough to hand it to the client
// that asked for it. Decoding and re-encoding replies would cost most of the
// throughput (measured: pipelined throughput falls to 0.05 of direct).
//
// What the proxy decides about a command lives in classify.go (connection
// state) and, for lock keys, in the rewrite package; this package moves bytes
// and keeps sessions. Every error text a client can receive is in errors.go.
package proxy
