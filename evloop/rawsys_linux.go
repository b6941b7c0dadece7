package evloop

import (
	"io"
	"syscall"
	"unsafe"

	"github.com/lockproxy/lockproxy/upstream"
	"golang.org/x/sys/unix"
)

// The loop's hot-path system calls — a read of a non-blocking socket,
// epoll_wait with a zero timeout — never block, so they go without the
// runtime's syscall bookkeeping (RawSyscall), as the direct writes to
// clients and to Valkey do (upstream's DirectWriter). With it, the
// runtime's monitor thread saw the one P of GOMAXPROCS=1 "in a system call"
// whenever a loopback write took longer than its 20 µs tick, took the P away
// and woke another thread to run it: a futex wake-up and a thread switch per
// such write, measured as thousands of nanosleep and futex calls a second
// under load. (The race detector does not see these calls touch their
// buffers; every buffer here belongs to one goroutine at a time.)

// sysRead reads fd once.
func sysRead(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}

// epollPoll returns the events ready now, never waiting.
func epollPoll(epfd int, evs []unix.EpollEvent) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	return int(n), e
}

// readFd reads a non-blocking socket once: EAGAIN is upstream.ErrWouldBlock,
// end of stream io.EOF.
func readFd(fd int, b []byte) (int, error) {
	for {
		n, errno := sysRead(fd, b)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return 0, upstream.ErrWouldBlock
		case errno != 0:
			return 0, errno
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
