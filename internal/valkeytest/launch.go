package valkeytest

import (
	"fmt"
	"net"
	"strconv"
)

// Launch starts a server in dir (which must exist) with the given extra
// directives, for callers without a testing.TB (cmd/fuzzgrammar). Stop it
// with Stop; Relaunch restarts it on its port with its configuration.
func Launch(dir string, directives ...string) (*Server, error) {
	s := &Server{Bin: Binary(), Dir: dir}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if lastErr = s.start(directives); lastErr == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("valkeytest: %s did not start: %v", s.Bin, lastErr)
}
