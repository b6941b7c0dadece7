package proxy

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
	if w, ok := nc.(interface{ unwrap() net.Conn }); ok {
		nc = w.unwrap()
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

// tryWrite writes what the socket takes now, never waiting: Go keeps its
// sockets non-blocking, so a full send buffer answers EAGAIN and the caller
// queues the rest for its writer goroutine. Any other error is left for that
// goroutine to meet on its own write.
func tryWrite(rc syscall.RawConn, b []byte) int {
	n := 0
	_ = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, errno := sysWrite(int(fd), b[n:])
			if errno == syscall.EINTR {
				continue
			}
			if errno != 0 || m <= 0 {
				break
			}
			n += m
		}
		return true // done: never park waiting for the socket
	})
	return n
}
