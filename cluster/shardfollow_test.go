package cluster

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
)

// testShardClient is a client subscribed to some shard channels, its
// relayed frames on a channel.
type testShardClient struct {
	mu      sync.Mutex
	wants   map[string]bool
	relayed chan []byte
}

func (c *testShardClient) Wants(ch string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wants[ch]
}
func (c *testShardClient) Gone(ch string) bool { return !c.Wants(ch) }
func (c *testShardClient) Drop(ch string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	had := c.wants[ch]
	delete(c.wants, ch)
	return len(c.wants), had
}
func (c *testShardClient) Relay(fr []byte) { c.relayed <- append([]byte(nil), fr...) }
func (c *testShardClient) Dial(addr string) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, time.Second)
}
func (c *testShardClient) Proto() int { return 2 }

// A followed shard channel is subscribed to on its slot's primary, whose
// messages reach the client; the client's SUNSUBSCRIBE of it is answered
// as Valkey would, and the following ends.
func TestShardFollowerRelaysAndUnsubscribes(t *testing.T) {
	cl := valkeytest.SharedCluster(t).Seeds()
	var wg sync.WaitGroup
	v := NewView(testHost(t, &wg), cl, time.Hour)
	v.Refresh()
	const ch = "{follow}news"
	c := &testShardClient{wants: map[string]bool{ch: true, "other": true}, relayed: make(chan []byte, 16)}
	f := v.NewShardFollower(c)
	done := make(chan struct{})
	go func() { f.Follow(ch, ""); close(done) }()

	primary, _ := v.Map().Primary(Slot([]byte(ch)))
	pub := resp.AppendCommandStrings(nil, "SPUBLISH", ch, "hello")
	for { // until the follower's subscription is in place
		r, err := v.host.Do(primary, 2, "", pub)
		if err != nil {
			t.Fatal(err)
		}
		if string(r[0]) == ":1\r\n" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := string(<-c.relayed); !strings.Contains(got, "smessage") || !strings.HasSuffix(got, "$5\r\nhello\r\n") {
		t.Fatalf("relayed %q", got)
	}
	if v.Stats.ShardFollows.Load() != 1 {
		t.Errorf("follows %d", v.Stats.ShardFollows.Load())
	}
	if _, ok := f.Unsubscribe(args("other")); ok {
		t.Error("a channel not followed was answered")
	}
	reply, ok := f.Unsubscribe(args(ch))
	if want := AppendSUnsubscribed(nil, 2, ch, 1); !ok || string(reply) != string(want) {
		t.Errorf("Unsubscribe = %q, %v; want %q", reply, ok, want)
	}
	<-done // the following ended with the subscription
	if c.Wants(ch) || !c.Wants("other") {
		t.Errorf("client's channels after: %v", c.wants)
	}
}
