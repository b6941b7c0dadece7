package main

import (
	"net"
	"os"
)

// sdNotify tells systemd (Type=notify) how the service is: "READY=1" once
// clients are accepted, "RELOADING=1" then "READY=1" around a SIGHUP reload,
// "STOPPING=1" when shutdown begins. Without NOTIFY_SOCKET (not started by
// systemd) it does nothing. Failures are ignored: systemd's own timeout
// reports a service that never said it was ready.
func sdNotify(state string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	if path[0] == '@' { // an abstract socket
		path = "\x00" + path[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = c.Write([]byte(state))
}
