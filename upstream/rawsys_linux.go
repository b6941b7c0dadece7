package upstream

import (
	"syscall"
	"unsafe"
)

// A direct write never blocks (the socket is non-blocking), so it goes
// without the runtime's syscall bookkeeping (RawSyscall), as the proxy's
// other hot-path system calls do: with it, the runtime's monitor thread saw
// the one P of GOMAXPROCS=1 "in a system call" whenever a loopback write
// took longer than its 20 µs tick, and handed the P to another thread.

// sysWrite writes b to fd once.
func sysWrite(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(n), e
}
