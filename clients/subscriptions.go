package clients

import "sync"

// Subscriptions are the channels, patterns and shard channels a client is
// subscribed to on its own upstream connection, as the client sees them:
// the one record for CLIENT LIST's sub, psub and ssub, for the RESP2
// subscribe context, and, in front of a cluster, for which shard channels
// the proxy follows when their slot moves. The follower reads and ends
// shard channels from goroutines of its own: hence the mutex. The zero
// value has none.
type Subscriptions struct {
	mu   sync.Mutex
	sets [3]map[string]struct{} // by SubKind
}

// SubKind is a kind of subscription, as Valkey counts them apart.
type SubKind int

// The kinds of subscription.
const (
	Channel SubKind = iota // SUBSCRIBE
	Pattern                // PSUBSCRIBE
	Shard                  // SSUBSCRIBE
)

// Apply applies a subscribe-family command of kind k to channels as Valkey
// applies it: subscribing adds the channels, unsubscribing removes the
// ones it names, or all of its kind when it names none. Valkey refuses a
// subscription only as a whole (ACL), which the proxy does not see: it
// counts it.
func (u *Subscriptions) Apply(k SubKind, unsub bool, channels [][]byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	set := u.sets[k]
	switch {
	case unsub && len(channels) == 0:
		u.sets[k] = nil
	case unsub:
		for _, ch := range channels {
			delete(set, string(ch))
		}
	default:
		if set == nil {
			set = make(map[string]struct{}, len(channels))
			u.sets[k] = set
		}
		for _, ch := range channels {
			set[string(ch)] = struct{}{}
		}
	}
}

// Counts returns how many channels, patterns and shard channels there are.
func (u *Subscriptions) Counts() (sub, psub, ssub int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sets[Channel]), len(u.sets[Pattern]), len(u.sets[Shard])
}

// Any reports whether Valkey counts a subscription.
func (u *Subscriptions) Any() bool {
	sub, psub, ssub := u.Counts()
	return sub+psub+ssub > 0
}

// HasShard reports whether the client is subscribed to shard channel ch.
func (u *Subscriptions) HasShard(ch string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.sets[Shard][ch]
	return ok
}

// DropShard ends the subscription to shard channel ch, where the proxy
// answers for it (a followed channel), and returns how many shard channels
// are left; had is false when ch was not subscribed.
func (u *Subscriptions) DropShard(ch string) (left int, had bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, had = u.sets[Shard][ch]
	delete(u.sets[Shard], ch)
	return len(u.sets[Shard]), had
}

// Clear ends every subscription (RESET).
func (u *Subscriptions) Clear() {
	u.mu.Lock()
	u.sets = [3]map[string]struct{}{}
	u.mu.Unlock()
}
