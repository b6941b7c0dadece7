//go:build !linux

package upstream

import "syscall"

func sysWrite(fd int, b []byte) (int, syscall.Errno) {
	n, err := syscall.Write(fd, b)
	if n < 0 {
		n = 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return n, e
	}
	return n, 0
}
