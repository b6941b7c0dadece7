//go:build !linux

package proxy

import (
	"errors"

	"github.com/lockproxy/lockproxy/upstream"
)

// Event loops need epoll. Elsewhere every client has a goroutine of its own,
// and these are never called on a live loop.

type loop struct{}

type fdReader struct{}

func (*fdReader) Read([]byte) (int, error) { return 0, upstream.ErrWouldBlock }

func newLoop(*Proxy) (*loop, error) { return nil, errors.New("event loops need Linux (epoll)") }

func (*loop) add(*session) bool             { return false }
func (*loop) remove(*session)               {}
func (*loop) reading(*session, bool)        {}
func (*loop) resume(*session)               {}
func (*loop) wake()                         {}
func (*loop) Queued(*upstream.Conn)         {}
func (*loop) uncork()                       {}
func (*loop) close()                        {}
func (*loop) addUp(*upstream.Conn) bool     { return false }
func (*loop) Detach(*upstream.Conn)         {}
func (*loop) CorkList() *[]upstream.Touched { return nil }
