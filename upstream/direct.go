package upstream

import (
	"net"
	"syscall"
)

// Writing straight from the goroutine that has the bytes saves a goroutine
// hand-off per request and per reply (the writer goroutines then only take
// over what the socket did not accept at once). Measured on the c=1 latency
// probe, each hand-off is a futex wake-up and a scheduler round trip.

// rawConn returns the socket of a plain TCP connection, or nil (TLS): only a
// plain socket can be written without ever blocking.
func rawConn(nc net.Conn) syscall.RawConn {
	if w, ok := nc.(interface{ Unwrap() net.Conn }); ok {
		nc = w.Unwrap()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	if _, isTCP := nc.(*net.TCPConn); !isTCP {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// DirectWriter writes what the socket takes now, never waiting: Go keeps
// its sockets non-blocking, so a full send buffer answers EAGAIN and the
// caller queues the rest for its writer goroutine. Any other error is left
// for that goroutine to meet on its own write.
//
// It goes through the RawConn (which keeps the descriptor from being closed
// and reused under the call) with a function bound once, at set-up: a
// closure made per call escapes into RawConn.Write and cost two allocations
// on every reply and every upstream batch. Callers serialise their writes
// (the session's outMu, the connection's mu), which also guards b and n.
type DirectWriter struct {
	rc syscall.RawConn
	fn func(fd uintptr) bool // w.do
	b  []byte
	n  int
}

// Init sets w up for nc's socket and returns it; nil when nc has none that
// can be written directly (TLS), and w must not be used then.
func (w *DirectWriter) Init(nc net.Conn) syscall.RawConn {
	w.rc = rawConn(nc)
	if w.rc != nil {
		w.fn = w.do
	}
	return w.rc
}

// Write writes what the socket takes of b now and returns how much.
func (w *DirectWriter) Write(b []byte) int {
	w.b, w.n = b, 0
	_ = w.rc.Write(w.fn)
	n := w.n
	w.b = nil
	return n
}

func (w *DirectWriter) do(fd uintptr) bool {
	for w.n < len(w.b) {
		m, errno := sysWrite(int(fd), w.b[w.n:])
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 || m <= 0 {
			break
		}
		w.n += m
	}
	return true // done: never park waiting for the socket
}
