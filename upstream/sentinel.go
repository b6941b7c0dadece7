package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel finds the primary of a master through Valkey Sentinel and
// follows its failovers (+switch-master). The zero value with Master empty
// is no Sentinel. Ask only within Timeout: every question goes to each
// Sentinel in turn, each within Timeout.
type Sentinel struct {
	Addrs              []string
	Master             string
	Username, Password string
	Timeout            time.Duration // upstream.dial_timeout

	mu      sync.Mutex
	primary string // the primary's address as last learnt; "" to ask again
}

// Primary is the primary's address: as last learnt, else asked of the
// Sentinels now, by ctx's deadline (each Sentinel within Timeout too).
func (s *Sentinel) Primary(ctx context.Context) (string, error) {
	if addr := s.Known(); addr != "" {
		return addr, nil
	}
	addr, err := s.resolve(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.primary = addr
	s.mu.Unlock()
	return addr, nil
}

// Known is the primary's address as last learnt, "" when unknown.
func (s *Sentinel) Known() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primary
}

// Forget makes the next Primary ask the Sentinels again (after a dial
// failed: the primary may have moved before Sentinel announced it).
func (s *Sentinel) Forget() {
	s.mu.Lock()
	s.primary = ""
	s.mu.Unlock()
}

// switchTo records addr as the primary and returns the one before.
func (s *Sentinel) switchTo(addr string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.primary
	s.primary = addr
	return old
}

// client is a client of the Sentinel at addr, whose dial and reads take at
// most timeout, and end by a request's context's deadline.
func (s *Sentinel) client(addr string, timeout time.Duration) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{
		Addr: addr, Username: s.Username, Password: s.Password,
		DialTimeout: timeout, ReadTimeout: timeout, MaxRetries: -1,
		ContextTimeoutEnabled: true,
		// One dial per question: go-redis's own retries (5 by default)
		// would multiply the bound.
		DialerRetries: 1,
	})
}

// ask runs one request against the Sentinel at addr, on a connection of
// its own, within the Sentinel timeout and by ctx's deadline.
func (s *Sentinel) ask(ctx context.Context, addr string, req func(context.Context, *redis.SentinelClient) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	dl, _ := ctx.Deadline()
	sc := s.client(addr, max(time.Until(dl), time.Millisecond))
	defer sc.Close()
	return req(ctx, sc)
}

// resolve asks each Sentinel in turn for the primary's address, by ctx's
// deadline. When none answers it is a SetupError: reason unreachable when
// no Sentinel could be asked (refused, no answer in time), error when one
// answered without the master.
func (s *Sentinel) resolve(ctx context.Context) (string, error) {
	var errs []error
	answered := false
	for _, sa := range s.Addrs {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("sentinel %s: not asked: %w", sa, ctx.Err()))
			break
		}
		var hp []string
		err := s.ask(ctx, sa, func(ctx context.Context, sc *redis.SentinelClient) (err error) {
			hp, err = sc.GetMasterAddrByName(ctx, s.Master).Result()
			return err
		})
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		answered = answered || sentinelAnswered(err)
		errs = append(errs, fmt.Errorf("sentinel %s: %v", sa, err))
	}
	msg := fmt.Sprintf("no Sentinel knows master %q: %v", s.Master, errors.Join(errs...))
	if answered {
		return "", &SetupError{Reason: ReasonError, Setting: "upstream.sentinel.master", Msg: msg}
	}
	return "", &SetupError{Reason: ReasonUnreachable, Setting: "upstream.sentinel.addrs",
		Msg: fmt.Sprintf("no Sentinel of upstream.sentinel.addrs answered (%v)", errors.Join(errs...))}
}

// sentinelAnswered reports whether err is a Sentinel's answer (a nil
// reply: it does not know the master; an error reply) rather than a
// failure to reach it.
func sentinelAnswered(err error) bool {
	var re redis.Error
	return err == nil || errors.Is(err, redis.Nil) || errors.As(err, &re)
}

// ConfigEpoch is the master's failover epoch as the Sentinels report it
// (SENTINEL MASTER's config-epoch, the highest of those that answer);
// false when none answers.
func (s *Sentinel) ConfigEpoch() (int64, bool) {
	var best int64
	answered := false
	for _, sa := range s.Addrs {
		var m map[string]string
		err := s.ask(context.Background(), sa, func(ctx context.Context, sc *redis.SentinelClient) (err error) {
			m, err = sc.Master(ctx, s.Master).Result()
			return err
		})
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(m["config-epoch"], 10, 64); err == nil {
			best, answered = max(best, v), true
		}
	}
	return best, answered
}

// Watch follows +switch-master announcements until ctx ends, from one
// Sentinel at a time (the next after backoff when one goes away). For an
// announced primary other than the one known, it records it and calls
// switched with the primary before and after.
func (s *Sentinel) Watch(ctx context.Context, backoff time.Duration, switched func(from, to string)) {
	for i := 0; ctx.Err() == nil; i++ {
		sc := s.client(s.Addrs[i%len(s.Addrs)], s.Timeout)
		sub := sc.Subscribe(ctx, "+switch-master")
		ch := sub.Channel()
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case msg, ok := <-ch:
				if !ok {
					break loop
				}
				// "<master> <old-ip> <old-port> <new-ip> <new-port>"
				f := strings.Fields(msg.Payload)
				if len(f) == 5 && f[0] == s.Master {
					to := net.JoinHostPort(f[3], f[4])
					if from := s.switchTo(to); from != to {
						switched(from, to)
					}
				}
			}
		}
		// The client first: closing it closes the subscription's
		// connection, which a hung Sentinel would otherwise hold (with
		// the subscription's lock) until a read's timeout.
		sc.Close()
		sub.Close()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}
