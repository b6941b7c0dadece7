package proxy

import (
	"net"

	"github.com/lockproxy/lockproxy/cluster"
)

// Sharded subscribers are followed when their channel's slot moves
// (cluster.ShardFollower): the node's unrequested sunsubscribe is held
// back here, and a connection of the proxy's own follows the channel to
// the slot's new primary.

// shardFollow is the session's follower of its shard channels (its field
// shards), created on the first SSUBSCRIBE.
type shardFollow = cluster.ShardFollower

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
			s.shards.Store(s.p.cl.NewShardFollower(shardClient{s}))
		}
		return
	}
	if id == cSUnsubscribe && len(args) == 1 {
		s.endShardFollows()
	}
}

// endShardFollows closes every following connection, for a command that
// ended the subscriptions (SUNSUBSCRIBE of all, RESET).
func (s *session) endShardFollows() {
	if f := s.shards.Load(); f != nil {
		f.EndAll()
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
	if !s.subs.HasShard(ch) || d == nil {
		return false
	}
	go f.Follow(ch, d.Addr())
	return true
}

// unsubscribeFollowed answers a client's SUNSUBSCRIBE of channels that are
// all followed (their slot moved to another node than the client's own
// connection), as Valkey would. It reports whether it answered.
func (s *session) unsubscribeFollowed(args [][]byte) bool {
	f := s.shards.Load()
	if f == nil || len(args) < 2 || idOf(args[0]) != cSUnsubscribe {
		return false
	}
	out, ok := f.Unsubscribe(args[1:])
	if ok {
		s.local(out)
	}
	return ok
}

// shardClient is a session as the cluster.ShardClient whose channels are
// followed.
type shardClient struct{ s *session }

func (c shardClient) Wants(ch string) bool { return c.s.subs.HasShard(ch) }

func (c shardClient) Drop(ch string) (int, bool) { return c.s.subs.DropShard(ch) }

func (c shardClient) Relay(fr []byte) { c.s.write(fr) }

func (c shardClient) Proto() int { return c.s.proto }

// Gone reports whether the client no longer wants ch, or is gone.
func (c shardClient) Gone(ch string) bool {
	s := c.s
	s.outMu.Lock()
	closed := s.outClosed
	s.outMu.Unlock()
	if closed || s.p.closed.Load() {
		return true
	}
	return !s.subs.HasShard(ch)
}

// Dial opens a connection to a node as the session's shared connections
// are opened: its protocol and login.
func (c shardClient) Dial(addr string) (net.Conn, error) {
	s := c.s
	return s.p.nodeDial(addr, s.p.sharedState(poolKey{proto: s.proto, login: s.login}))
}
