package cluster

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/lockproxy/lockproxy/resp"
)

// Sharded subscribers are followed when their channel's slot moves. A
// cluster node that loses a slot (resharding, failover) tells each client
// subscribed to a shard channel of that slot with an sunsubscribe the
// client never asked for; a cluster-aware client then subscribes again on
// the slot's new primary. A client of lockproxy believes it talks to one
// server (cluster_face hidden) or to one node owning every slot
// (single_node), where that never happens: so the proxy keeps the
// subscription itself. The unrequested sunsubscribe is not passed on (the
// proxy's to hold back); a connection of the proxy's own subscribes to the
// channel on the new primary and hands the client its messages, until the
// client unsubscribes from it (answered here, as Valkey would) or leaves.
// Messages published between the node's sunsubscribe and the new
// SSUBSCRIBE are lost, as they are for a cluster-aware client.

// ShardClient is the client whose shard channels a ShardFollower follows:
// a session, seen only through these.
type ShardClient interface {
	// Wants reports whether the client is subscribed to shard channel ch.
	Wants(ch string) bool
	// Gone reports whether the client no longer wants ch, or is gone.
	Gone(ch string) bool
	// Drop ends the client's subscription to ch and returns how many
	// shard channels it has left; had is false when it had none to ch.
	Drop(ch string) (left int, had bool)
	// Relay hands the client a frame of a followed channel.
	Relay(fr []byte)
	// Dial opens a connection to the node at addr as the client's shared
	// connections are opened (its protocol and login).
	Dial(addr string) (net.Conn, error)
	// Proto is the client's protocol (2 or 3).
	Proto() int
}

// ShardFollower is the connections following one client's shard channels
// to their slot's new primary. Which shard channels the client wants is
// the client's (ShardClient.Wants).
type ShardFollower struct {
	view   *View
	client ShardClient

	mu       sync.Mutex
	followed map[string]net.Conn // channel → the connection following it
}

// followTimeout bounds the wait for the map to name the slot's new primary.
const followTimeout = 10 * time.Second

// NewShardFollower prepares following c's shard channels (on its first
// SSUBSCRIBE).
func (v *View) NewShardFollower(c ShardClient) *ShardFollower {
	return &ShardFollower{view: v, client: c, followed: map[string]net.Conn{}}
}

// EndAll closes every following connection, for a command that ended the
// subscriptions (SUNSUBSCRIBE of all, RESET): their relays end, and leave
// no subscriber of the proxy's counted on the nodes.
func (f *ShardFollower) EndAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, c := range f.followed {
		c.Close()
		delete(f.followed, ch)
	}
}

// Follow subscribes to ch on its slot's primary once the view's map names
// one other than from, and relays the channel's messages to the client,
// following it again if the slot moves on. It gives up, and tells the
// client with the sunsubscribe Valkey sent, when no other primary is known
// within followTimeout. It returns when the client no longer wants ch: run
// it on a goroutine of its own.
func (f *ShardFollower) Follow(ch, from string) {
	c := f.client
	slot := Slot([]byte(ch))
	deadline := time.Now().Add(followTimeout)
	for !c.Gone(ch) {
		to := ""
		if m := f.view.Map(); m != nil {
			if a, ok := m.Primary(slot); ok && a != from {
				to = a
			}
		}
		if to == "" {
			if time.Now().After(deadline) {
				f.giveUp(ch)
				return
			}
			f.view.Refresh()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		nc, err := c.Dial(to)
		if err != nil {
			f.view.RefreshSoon()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		f.mu.Lock()
		if !c.Wants(ch) {
			f.mu.Unlock()
			nc.Close()
			return
		}
		f.followed[ch] = nc
		f.mu.Unlock()
		f.view.Stats.ShardFollows.Add(1)
		moved := f.relay(nc, ch)
		f.mu.Lock()
		if f.followed[ch] == nc {
			delete(f.followed, ch)
		}
		f.mu.Unlock()
		nc.Close()
		if !moved {
			if time.Now().After(deadline) {
				f.giveUp(ch)
				return
			}
			time.Sleep(100 * time.Millisecond) // refused (MOVED: an old map) or cut: again
			continue
		}
		from, deadline = to, time.Now().Add(followTimeout)
	}
}

// relay subscribes nc to ch and hands the client every message until the
// client no longer wants ch, the client is gone, or the node sends an
// sunsubscribe of its own (the slot moved on: moved is true).
func (f *ShardFollower) relay(nc net.Conn, ch string) (moved bool) {
	c := f.client
	if _, err := nc.Write(resp.AppendCommandStrings(nil, "SSUBSCRIBE", ch)); err != nil {
		return false
	}
	var fm resp.Framer
	buf := make([]byte, 0, 4096)
	confirmed := false
	for {
		m, err := fm.Frame(buf)
		if err != nil {
			return false
		}
		if m > 0 {
			fr := buf[:m]
			switch {
			case !confirmed:
				// The reply to the proxy's SSUBSCRIBE: not the client's.
				if fr[0] == '-' {
					f.view.RefreshSoon()
					return false
				}
				confirmed = true
			default:
				if got, ok := SUnsubscribed(fr); ok && got == ch {
					return !c.Gone(ch)
				}
				if c.Gone(ch) {
					return false // read before the client ended it: not its
				}
				c.Relay(fr)
			}
			buf = append(buf[:0], buf[m:]...)
			continue
		}
		if c.Gone(ch) {
			return false
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		_ = nc.SetReadDeadline(time.Now().Add(time.Second))
		n, err := nc.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil && n == 0 && !isTimeout(err) {
			return false
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// giveUp tells the client its subscription to ch ended, with the
// sunsubscribe Valkey sent, when it cannot be followed.
func (f *ShardFollower) giveUp(ch string) {
	n, had := f.client.Drop(ch)
	if !had {
		return
	}
	f.client.Relay(AppendSUnsubscribed(nil, f.client.Proto(), ch, n))
}

// Unsubscribe answers a client's SUNSUBSCRIBE of chans when every one is
// followed (their slot moved to another node than the client's own
// connection): their connections close, the client's subscriptions end,
// and the reply is Valkey's, one message per channel with the count of
// shard channels left. ok is false, and nothing done, when one is not
// followed.
func (f *ShardFollower) Unsubscribe(chans [][]byte) (reply []byte, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range chans {
		if f.followed[string(ch)] == nil {
			return nil, false
		}
	}
	for _, ch := range chans {
		if c := f.followed[string(ch)]; c != nil {
			c.Close()
			delete(f.followed, string(ch))
		}
		left, _ := f.client.Drop(string(ch))
		reply = AppendSUnsubscribed(reply, f.client.Proto(), string(ch), left)
	}
	return reply, true
}
