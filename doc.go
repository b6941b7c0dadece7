// Package lockproxy is a RESP proxy for Valkey and Redis that makes
// distributed-lock release safe for applications never written to be safe.
//
// The program is cmd/lockproxy; the pieces are proxy (network and sessions),
// resp (the wire codec), policy (configuration and lock rules), rewrite (what
// to send upstream for a lock command, as pure data) and luaeval (offline
// execution of the scripts lockproxy sends). This root package holds only the
// end-to-end tests, which run against a real valkey-server.
package lockproxy
