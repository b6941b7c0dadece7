package proxy

import (
	"net"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/cluster"
	"github.com/lockproxy/lockproxy/resp"
	"github.com/lockproxy/lockproxy/upstream"
)

// Sharded subscribers are followed when their channel's slot moves. A
// cluster node that loses a slot (resharding, failover) tells each client
// subscribed to a shard channel of that slot with an sunsubscribe the
// client never asked for; a cluster-aware client then subscribes again on
// the slot's new primary. A client of lockproxy believes it talks to one
// server (cluster_face hidden) or to one node owning every slot
// (single_node), where that never happens: so the proxy keeps the
// subscription itself. The unrequested sunsubscribe is not passed on; a
// connection of the proxy's own subscribes to the channel on the new
// primary and hands the client its messages, until the client unsubscribes
// from it (answered by the proxy, as Valkey would) or leaves. Messages
// published between the node's sunsubscribe and the new SSUBSCRIBE are
// lost, as they are for a cluster-aware client.

// shardFollow is the proxy's connections following a session's shard
// channels to their slot's new primary. Which shard channels the client
// wants is the session's subscriptions (subscriptions.go).
type shardFollow struct {
	mu       sync.Mutex
	followed map[string]net.Conn // channel → the proxy's connection following it
}

// trackShardChannels prepares following on the client's first SSUBSCRIBE,
// and on an SUNSUBSCRIBE of every shard channel ends the followed ones
// (Valkey, which answers it, no longer holds them on the session's own
// connection).
func (s *session) trackShardChannels(args [][]byte) {
	if s.p.cl == nil {
		return
	}
	id := idOf(args[0])
	if id == cSSubscribe {
		if s.shards.Load() == nil {
			s.shards.Store(&shardFollow{followed: map[string]net.Conn{}})
		}
		return
	}
	if id == cSUnsubscribe && len(args) == 1 {
		s.endShardFollows()
	}
}

// endShardFollows closes every following connection, for a command that
// ended the subscriptions (SUNSUBSCRIBE of all, RESET): their relays end,
// and leave no subscriber of the proxy's counted on the nodes.
func (s *session) endShardFollows() {
	f := s.shards.Load()
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, c := range f.followed {
		c.Close()
		delete(f.followed, ch)
	}
}

// shardUnsubscribed reports whether b, a frame for the session from its
// own connection, is an sunsubscribe the client did not ask for; it then
// starts following the channel to its slot's new primary, away from the
// node of the session's own connection, which sent it.
func (s *session) shardUnsubscribed(b []byte) bool {
	f := s.shards.Load()
	if f == nil {
		return false
	}
	ch, ok := cluster.SUnsubscribed(b)
	if !ok {
		return false
	}
	d := s.dedicated()
	if !s.subs.hasShard(ch) || d == nil {
		return false
	}
	go s.followShard(ch, d.Addr())
	return true
}

// followShard subscribes to ch on its slot's primary once the proxy's map
// names one other than from, and hands the client the channel's messages,
// following it again if the slot moves on. It gives up, and tells the
// client with the sunsubscribe it withheld, when no other primary is known
// within followTimeout.
func (s *session) followShard(ch, from string) {
	f := s.shards.Load()
	slot := cluster.Slot([]byte(ch))
	deadline := time.Now().Add(followTimeout)
	for !s.shardGone(ch) {
		to := ""
		if m := s.p.cl.Map(); m != nil {
			if a, ok := m.Primary(slot); ok && a != from {
				to = a
			}
		}
		if to == "" {
			if time.Now().After(deadline) {
				s.giveUpShard(ch)
				return
			}
			s.p.cl.Refresh()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		nc, err := s.p.nodeDial(to, s.p.sharedState(poolKey{proto: s.proto, login: s.login}))
		if err != nil {
			s.p.cl.RefreshSoon()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		f.mu.Lock()
		if !s.subs.hasShard(ch) {
			f.mu.Unlock()
			nc.Close()
			return
		}
		f.followed[ch] = nc
		f.mu.Unlock()
		s.p.cl.Stats.ShardFollows.Add(1)
		moved := s.relayShard(nc, ch)
		f.mu.Lock()
		if f.followed[ch] == nc {
			delete(f.followed, ch)
		}
		f.mu.Unlock()
		nc.Close()
		if !moved {
			if time.Now().After(deadline) {
				s.giveUpShard(ch)
				return
			}
			time.Sleep(100 * time.Millisecond) // refused (MOVED: an old map) or cut: again
			continue
		}
		from, deadline = to, time.Now().Add(followTimeout)
	}
}

// followTimeout bounds the wait for the map to name the slot's new primary.
const followTimeout = 10 * time.Second

// relayShard subscribes nc to ch and hands the client every message until
// the client no longer wants ch, the session ends, or the node sends an
// sunsubscribe of its own (the slot moved on: moved is true).
func (s *session) relayShard(nc net.Conn, ch string) (moved bool) {
	if _, err := nc.Write(resp.AppendCommandStrings(nil, "SSUBSCRIBE", ch)); err != nil {
		return false
	}
	var f resp.Framer
	buf := make([]byte, 0, 4096)
	confirmed := false
	for {
		m, err := f.Frame(buf)
		if err != nil {
			return false
		}
		if m > 0 {
			fr := buf[:m]
			switch {
			case !confirmed:
				// The reply to the proxy's SSUBSCRIBE: not the client's.
				if fr[0] == '-' {
					s.p.cl.RefreshSoon()
					return false
				}
				confirmed = true
			default:
				if c, ok := cluster.SUnsubscribed(fr); ok && c == ch {
					return !s.shardGone(ch)
				}
				if s.shardGone(ch) {
					return false // read before the client ended it: not its
				}
				s.write(fr)
			}
			buf = append(buf[:0], buf[m:]...)
			continue
		}
		if s.shardGone(ch) {
			return false
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		_ = nc.SetReadDeadline(time.Now().Add(time.Second))
		n, err := nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil && n == 0 && !upstream.IsTimeout(err) {
			return false
		}
	}
}

// shardGone reports whether the client no longer wants ch, or is gone.
func (s *session) shardGone(ch string) bool {
	s.outMu.Lock()
	closed := s.outClosed
	s.outMu.Unlock()
	if closed || s.p.closed.Load() {
		return true
	}
	return !s.subs.hasShard(ch)
}

// giveUpShard tells the client its subscription to ch ended, with the
// sunsubscribe Valkey sent, when it cannot be followed.
func (s *session) giveUpShard(ch string) {
	n, had := s.subs.dropShard(ch)
	if !had {
		return
	}
	s.write(cluster.AppendSUnsubscribed(nil, s.proto, ch, n))
}

// unsubscribeFollowed answers a client's SUNSUBSCRIBE of channels that are
// all followed (their slot moved to another node than the client's own
// connection): their connections close, and the client gets Valkey's
// replies, one per channel, with the count of shard channels left. It
// reports whether it answered.
func (s *session) unsubscribeFollowed(args [][]byte) bool {
	f := s.shards.Load()
	if f == nil || len(args) < 2 || idOf(args[0]) != cSUnsubscribe {
		return false
	}
	f.mu.Lock()
	for _, ch := range args[1:] {
		if f.followed[string(ch)] == nil {
			f.mu.Unlock()
			return false
		}
	}
	var out []byte
	for _, ch := range args[1:] {
		if c := f.followed[string(ch)]; c != nil {
			c.Close()
			delete(f.followed, string(ch))
		}
		left, _ := s.subs.dropShard(string(ch))
		out = cluster.AppendSUnsubscribed(out, s.proto, string(ch), left)
	}
	f.mu.Unlock()
	s.local(out)
	return true
}
