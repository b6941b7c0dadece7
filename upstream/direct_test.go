package upstream

import (
	"io"
	"net"
	"testing"
)

// TestDirectWriterNoAlloc: a direct write costs no allocation (it runs for
// every reply and every upstream batch) and delivers every byte.
func TestDirectWriterNoAlloc(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var w DirectWriter
	if w.Init(nc) == nil {
		t.Fatal("a TCP connection has no raw socket")
	}
	msg := []byte("+OK\r\n")
	sent := 0
	allocs := testing.AllocsPerRun(1000, func() { sent += w.Write(msg) })
	nc.Close()
	if raceEnabled {
		t.Log("allocations not checked under the race detector")
	} else if allocs != 0 {
		t.Errorf("write allocates %v times per call, want 0", allocs)
	}
	if n := <-got; n != int64(sent) || sent != 1001*len(msg) {
		t.Errorf("peer read %d bytes, writes reported %d, want %d", n, sent, 1001*len(msg))
	}
}
