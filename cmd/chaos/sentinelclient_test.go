package main

import "testing"

// The Sentinel client reads the primary's address from
// SENTINEL GET-MASTER-ADDR-BY-NAME, and nothing else as one.
func TestParseMasterAddr(t *testing.T) {
	addr, err := parseMasterAddr("*2\r\n$9\r\n127.0.0.1\r\n$5\r\n44369\r\n")
	if err != nil || addr != "127.0.0.1:44369" {
		t.Fatalf("got %q %v", addr, err)
	}
	addr, err = parseMasterAddr("*2\r\n$3\r\n::1\r\n$4\r\n6379\r\n")
	if err != nil || addr != "[::1]:6379" {
		t.Fatalf("IPv6: got %q %v", addr, err)
	}
	for _, bad := range []string{
		"*-1\r\n", // the master is unknown
		"$-1\r\n",
		"-IDONTKNOW No such master with that name\r\n",
		"*2\r\n$9\r\n127.0.0.1\r\n",                          // cut short
		"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n44369\r\n+OK\r\n",    // two replies
		"*2\r\n$20\r\n127.0.0.1\r\n$5\r\n44369\r\n",          // a wrong length
		"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n",            // three elements
		replyCut + " dial: connection refused", replyTimeout, // no reply
	} {
		if addr, err := parseMasterAddr(bad); err == nil {
			t.Errorf("%q: read as %q", bad, addr)
		}
	}
}
