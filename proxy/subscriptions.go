package proxy

import "sync"

// subscriptions are the channels, patterns and shard channels a session is
// subscribed to on its dedicated connection, as the client sees them: the
// one record for CLIENT LIST's sub, psub and ssub, for the RESP2 subscribe
// context, and, in front of a cluster, for which shard channels the proxy
// follows when their slot moves (cluster_shard_follow.go). The follower
// reads and ends shard channels from goroutines of its own: hence the
// mutex.
type subscriptions struct {
	mu   sync.Mutex
	sets [3]map[string]struct{} // by subKind
}

// The kinds of subscription, as Valkey counts them apart.
const (
	subChannel = iota // SUBSCRIBE
	subPattern        // PSUBSCRIBE
	subShard          // SSUBSCRIBE
)

// subKind tells a subscribe-family command's kind of subscription, and
// whether it unsubscribes.
func subKind(name []byte) (kind int, unsub bool) {
	switch {
	case len(name) > 0 && (name[0] == 'p' || name[0] == 'P'):
		kind = subPattern
	case len(name) > 0 && (name[0] == 's' || name[0] == 'S') && idOf(name) != cSubscribe:
		kind = subShard
	}
	return kind, hasSuffixFold(name, "unsubscribe")
}

// apply applies a subscribe-family command as Valkey applies it: SUBSCRIBE
// adds its channels, UNSUBSCRIBE removes the ones it names, or all of its
// kind when it names none. Valkey refuses a subscription only as a whole
// (ACL), which the proxy does not see: it counts it.
func (u *subscriptions) apply(args [][]byte) {
	k, unsub := subKind(args[0])
	u.mu.Lock()
	defer u.mu.Unlock()
	set := u.sets[k]
	switch {
	case unsub && len(args) == 1:
		u.sets[k] = nil
	case unsub:
		for _, ch := range args[1:] {
			delete(set, string(ch))
		}
	default:
		if set == nil {
			set = make(map[string]struct{}, len(args)-1)
			u.sets[k] = set
		}
		for _, ch := range args[1:] {
			set[string(ch)] = struct{}{}
		}
	}
}

// counts returns how many channels, patterns and shard channels there are.
func (u *subscriptions) counts() (sub, psub, ssub int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sets[subChannel]), len(u.sets[subPattern]), len(u.sets[subShard])
}

// any reports whether Valkey counts a subscription.
func (u *subscriptions) any() bool {
	sub, psub, ssub := u.counts()
	return sub+psub+ssub > 0
}

// hasShard reports whether the client is subscribed to shard channel ch.
func (u *subscriptions) hasShard(ch string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.sets[subShard][ch]
	return ok
}

// dropShard ends the subscription to shard channel ch, where the proxy
// answers for it (a followed channel), and returns how many shard channels
// are left; had is false when ch was not subscribed.
func (u *subscriptions) dropShard(ch string) (left int, had bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, had = u.sets[subShard][ch]
	delete(u.sets[subShard], ch)
	return len(u.sets[subShard]), had
}

// clear ends every subscription (RESET).
func (u *subscriptions) clear() {
	u.mu.Lock()
	u.sets = [3]map[string]struct{}{}
	u.mu.Unlock()
}
