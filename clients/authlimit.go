package clients

import (
	"sync"
	"time"
)

// Failed LOCKPROXY AUTH attempts allowed per client address within
// AuthFailWindow; past them, the address's attempts are refused unchecked
// until the window that began with its first failure is over. Ten guesses a
// minute make a password of any real length impossible to guess, and an
// operator who mistypes a few times is not locked out.
const (
	AuthFailLimit  = 10
	AuthFailWindow = time.Minute
	// authFailAddrs bounds the addresses remembered; past it, windows that
	// are over are forgotten first, then the oldest.
	authFailAddrs = 10000
)

// AuthLimiter counts failed admin logins per client address in fixed
// windows. now is the clock (time.Now; tests set their own).
type AuthLimiter struct {
	mu     sync.Mutex
	now    func() time.Time
	limit  int
	window time.Duration
	max    int
	addrs  map[string]*authFailures
}

type authFailures struct {
	n     int
	since time.Time // the window's first failure
}

// NewAuthLimiter is a limiter of AuthFailLimit failures per address within
// AuthFailWindow, remembering at most authFailAddrs addresses.
func NewAuthLimiter() *AuthLimiter {
	return &AuthLimiter{now: time.Now, limit: AuthFailLimit, window: AuthFailWindow,
		max: authFailAddrs, addrs: map[string]*authFailures{}}
}

// Blocked reports how long addr must still wait before an attempt is
// checked; 0 when it may try now.
func (l *AuthLimiter) Blocked(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.addrs[addr]
	if f == nil {
		return 0
	}
	left := l.window - l.now().Sub(f.since)
	if left <= 0 {
		delete(l.addrs, addr)
		return 0
	}
	if f.n < l.limit {
		return 0
	}
	return left
}

// Failed counts a failed attempt from addr and reports whether addr has now
// reached the limit.
func (l *AuthLimiter) Failed(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.addrs[addr]
	if f == nil || now.Sub(f.since) >= l.window {
		if f == nil && len(l.addrs) >= l.max {
			l.evict(now)
		}
		f = &authFailures{since: now}
		l.addrs[addr] = f
	}
	f.n++
	return f.n == l.limit
}

// evict forgets the windows that are over or, when none is, the oldest.
func (l *AuthLimiter) evict(now time.Time) {
	var oldest string
	for a, f := range l.addrs {
		if now.Sub(f.since) >= l.window {
			delete(l.addrs, a)
		} else if oldest == "" || f.since.Before(l.addrs[oldest].since) {
			oldest = a
		}
	}
	if len(l.addrs) >= l.max {
		delete(l.addrs, oldest)
	}
}
