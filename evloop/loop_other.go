//go:build !linux

package evloop

import (
	"errors"
	"syscall"

	"github.com/lockproxy/lockproxy/upstream"
)

// Event loops need epoll. Elsewhere every client has a goroutine of its own
// (New fails, so a Group gives no loop), and these are never called on a
// live loop.

type Loop struct{}

func New(Config) (*Loop, error) { return nil, errors.New("event loops need Linux (epoll)") }

func readFd(int, []byte) (int, error) { return 0, upstream.ErrWouldBlock }

func (*Loop) Add(*Member, syscall.RawConn, Client) bool { return false }
func (*Loop) Remove(*Member)                            {}
func (*Loop) Reading(*Member, bool)                     {}
func (*Loop) Resume(*Member)                            {}
func (*Loop) Wake()                                     {}
func (*Loop) Queued(*upstream.Conn)                     {}
func (*Loop) Uncork()                                   {}
func (*Loop) Close()                                    {}
func (*Loop) AddUp(*upstream.Conn) bool                 { return false }
func (*Loop) Detach(*upstream.Conn)                     {}
func (*Loop) CorkList() *[]upstream.Touched             { return nil }
