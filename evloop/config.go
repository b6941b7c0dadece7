package evloop

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// Config is what a loop is told when it starts; it does not change after.
type Config struct {
	// Log takes the error of an upstream connection failed by a panic
	// while the loop read it.
	Log *slog.Logger
	// Idle is client_idle_timeout: a client that sent nothing for this
	// long while owed no reply is dropped (Client.Drop). 0: never.
	Idle time.Duration
	// BusyPoll is busy_poll: how long a loop with nothing to do asks
	// epoll again before it parks. 0: it parks at once.
	BusyPoll time.Duration
	// BytesIn counts the bytes read from the clients (nil: not counted).
	BytesIn *atomic.Int64
}
