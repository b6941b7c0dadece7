// Package resp is lockproxy's RESP codec: it turns the bytes a client sends
// into commands (Reader), finds where each reply in the upstream byte stream
// ends (Framer), decodes the few replies the proxy has to look into (Parse)
// and encodes what the proxy writes itself (the Append* helpers).
//
// It sits on the per-command hot path of a proxy that has to keep up with
// Valkey, and it faces untrusted clients, so it must:
//
//   - match Valkey's parsing and error texts (networking.c), so a client
//     cannot tell the proxy's parser from the server's;
//   - never size a buffer, slice or map from a length the peer announced:
//     memory grows only with bytes that actually arrived, and a finished
//     large command does not keep its buffer pinned;
//   - never recurse over peer-controlled nesting, and never rescan bytes it
//     already looked at when a reply or command arrives in pieces;
//   - not allocate per command in steady state.
//
// It must not do networking, start goroutines, log, keep global state, or
// depend on any other lockproxy package: deadlines, flushing, connection
// lifetime and command semantics belong to the proxy core.
package resp
