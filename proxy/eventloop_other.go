//go:build !linux

package proxy

import "errors"

// Event loops need epoll. Elsewhere every client has a goroutine of its own,
// and these are never called on a live loop.

type loop struct{}

type fdReader struct{}

func (*fdReader) Read([]byte) (int, error) { return 0, errWouldBlock }

func newLoop(*Proxy) (*loop, error) { return nil, errors.New("event loops need Linux (epoll)") }

func (*loop) add(*session) bool      { return false }
func (*loop) remove(*session)        {}
func (*loop) reading(*session, bool) {}
func (*loop) resume(*session)        {}
func (*loop) wake()                  {}
func (*loop) Queued(*upConn)         {}
func (*loop) uncork()                {}
func (*loop) close()                 {}
func (*loop) addUp(*upConn) bool     { return false }
func (*loop) Detach(*upConn)         {}
func (*loop) CorkList() *[]touched   { return nil }
