package clients

import (
	"net"
	"testing"
)

// dialLocal opens a TCP connection to a listener of the test's own: a
// connection with a real local address, as the proxy's upstream ones have.
func dialLocal(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// monitorLine is a MONITOR line of Valkey's from addr.
func monitorLine(addr, cmd string) []byte {
	return []byte(`+1733400000.123456 [0 ` + addr + `] "` + cmd + `"`)
}

func TestOwnLinesDrop(t *testing.T) {
	var o OwnLines
	a, b := dialLocal(t), dialLocal(t)
	la, lb := a.LocalAddr().String(), b.LocalAddr().String()

	o.Add(a, 2) // no client monitors: nothing recorded
	if o.Drop(monitorLine(la, "SELECT")) {
		t.Fatal("dropped a line recorded while nobody monitored")
	}
	o.Begin()
	o.Add(a, 2)
	o.Add(a, 1) // more set-up on the same connection adds up
	for i := range 3 {
		if !o.Drop(monitorLine(la, "CLIENT")) {
			t.Fatalf("set-up line %d of %s shown", i+1, la)
		}
	}
	for _, line := range [][]byte{
		monitorLine(la, "GET"),       // its set-up is over
		monitorLine(lb, "SET"),       // nothing recorded for b
		[]byte(`+1.0 [0 lua] "GET"`), // from a script
		[]byte(`-ERR something`),     // not a MONITOR line
		[]byte(`+OK`),
	} {
		if o.Drop(line) {
			t.Errorf("dropped %q", line)
		}
	}
	o.End()
}

// A handshake is recorded whether or not a client monitors, and forgotten
// once done when none monitored all along.
func TestOwnLinesHandshake(t *testing.T) {
	var o OwnLines
	a, b := dialLocal(t), dialLocal(t)
	done := o.Handshake(a, 1)
	done()
	if o.Drop(monitorLine(a.LocalAddr().String(), "HELLO")) {
		t.Fatal("a handshake read before any MONITOR began is still left out")
	}
	done = o.Handshake(b, 1)
	o.Begin() // MONITOR begins before Valkey read the handshake
	done()
	if !o.Drop(monitorLine(b.LocalAddr().String(), "HELLO")) {
		t.Fatal("a handshake a MONITOR may show is not left out")
	}
	o.End()
}
