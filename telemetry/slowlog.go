package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Slow is one command whose reply took at least the slow log's threshold,
// as the client saw it. It names the command and counts its keys and
// arguments; it never holds an argument's value.
type Slow struct {
	ID       int64     // rises by one per command logged since start
	At       time.Time // when the command's first byte was read
	Duration time.Duration
	Command  string // the command's label (lower case; "unknown" for a name not in Valkey's table)
	Keys     int    // the command's keys, as Valkey's key specs count them; -1 when not known
	Args     int    // arguments after the command name
	ClientID uint64
	Addr     string // the client's address
	Name     string // the client's name (CLIENT SETNAME)
	Error    string // the code word of an error reply, "" for a reply that is no error
}

// slowQueue is how many slow commands may wait for their log line. A burst
// larger than this, while the log is slow, loses lines, never replies;
// LOCKPROXY SLOWLOG still has them.
const slowQueue = 1024

// SlowLog keeps the most recent slow commands in a ring of fixed size
// (LOCKPROXY SLOWLOG) and logs each on a goroutine of its own, off the
// reply path. Its threshold and length change on reload.
type SlowLog struct {
	threshold atomic.Int64 // nanoseconds; negative: nothing is slow
	total     atomic.Int64 // commands at or above the threshold since start

	mu   sync.Mutex
	ring []Slow // the newest at next-1
	next int
	n    int // entries in the ring
	seq  int64

	log  *slog.Logger
	q    chan Slow
	quit chan struct{}
	done chan struct{}
}

// NewSlowLog makes a slow log keeping maxLen entries, logging to log.
func NewSlowLog(log *slog.Logger, threshold time.Duration, maxLen int) *SlowLog {
	l := &SlowLog{log: log, q: make(chan Slow, slowQueue), quit: make(chan struct{}), done: make(chan struct{})}
	l.Set(threshold, maxLen)
	go l.run()
	return l
}

// Set changes the threshold (negative: log nothing) and the ring's length;
// a new length keeps the newest entries that fit.
func (l *SlowLog) Set(threshold time.Duration, maxLen int) {
	l.threshold.Store(int64(threshold))
	maxLen = max(maxLen, 0)
	l.mu.Lock()
	defer l.mu.Unlock()
	if maxLen == len(l.ring) {
		return
	}
	kept := l.recentLocked(maxLen)
	l.ring = make([]Slow, maxLen)
	l.n, l.next = 0, 0
	for i := len(kept) - 1; i >= 0; i-- {
		l.addLocked(kept[i])
	}
}

// Slow reports whether a reply that took d nanoseconds is slow.
func (l *SlowLog) Slow(d int64) bool {
	t := l.threshold.Load()
	return t >= 0 && d >= t
}

// Enabled reports whether any reply can be slow (the threshold is not
// negative).
func (l *SlowLog) Enabled() bool { return l.threshold.Load() >= 0 }

// Add keeps e (its ID set here) and queues its log line without waiting.
func (l *SlowLog) Add(e Slow) {
	l.total.Add(1)
	l.mu.Lock()
	l.seq++
	e.ID = l.seq - 1
	if len(l.ring) > 0 {
		l.addLocked(e)
	}
	l.mu.Unlock()
	select {
	case l.q <- e:
	default:
	}
}

func (l *SlowLog) addLocked(e Slow) {
	l.ring[l.next] = e
	l.next = (l.next + 1) % len(l.ring)
	l.n = min(l.n+1, len(l.ring))
}

// Recent is the newest n entries, newest first (n < 0: all kept).
func (l *SlowLog) Recent(n int) []Slow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recentLocked(n)
}

func (l *SlowLog) recentLocked(n int) []Slow {
	if n < 0 || n > l.n {
		n = l.n
	}
	out := make([]Slow, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, l.ring[(l.next-i+len(l.ring))%len(l.ring)])
	}
	return out
}

// Len is how many entries the ring holds now.
func (l *SlowLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Reset empties the ring (the count of slow commands stays).
func (l *SlowLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.ring)
	l.n, l.next = 0, 0
}

// Total is how many commands were slow since start (slow_commands_total).
func (l *SlowLog) Total() int64 { return l.total.Load() }

func (l *SlowLog) run() {
	defer close(l.done)
	for {
		select {
		case e := <-l.q:
			l.write(e)
		case <-l.quit:
			for {
				select {
				case e := <-l.q:
					l.write(e)
				default:
					return
				}
			}
		}
	}
}

func (l *SlowLog) write(e Slow) {
	l.log.LogAttrs(context.Background(), slog.LevelInfo, "slow command",
		slog.String("command", e.Command), slog.Int("keys", e.Keys), slog.Int("args", e.Args),
		slog.Duration("duration", e.Duration), slog.String("error", e.Error),
		slog.Uint64("client_id", e.ClientID), slog.String("client", e.Addr), slog.String("client_name", e.Name))
}

// Close writes the lines queued and stops the goroutine.
func (l *SlowLog) Close() {
	close(l.quit)
	<-l.done
}
