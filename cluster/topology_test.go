package cluster

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/resp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	valkeytest.StopSharedCluster()
	os.Exit(code)
}

func parse(t *testing.T, b []byte) resp.Value {
	t.Helper()
	v, n, err := resp.Parse(b)
	if err != nil || n != len(b) {
		t.Fatalf("parse %q: %v (%d of %d bytes)", b, err, n, len(b))
	}
	return v
}

// CLUSTER SHARDS and CLUSTER SLOTS of every node, in both protocols, give
// the same map; it covers every slot with three primaries and names six
// nodes; and each key's primary by the map serves it (no MOVED).
func TestMapFromRealCluster(t *testing.T) {
	cl := valkeytest.SharedCluster(t)
	var first *Map
	for _, n := range cl.Nodes {
		for _, proto := range []int{2, 3} {
			c := valkeytest.Dial(t, n.Addr, proto)
			sh, err := FromShards(parse(t, c.Do(t, "CLUSTER", "SHARDS")), false, n.Addr)
			if err != nil {
				t.Fatal(err)
			}
			sl, err := FromSlots(parse(t, c.Do(t, "CLUSTER", "SLOTS")), n.Addr)
			if err != nil {
				t.Fatal(err)
			}
			if !sh.Equal(sl) {
				t.Errorf("%s RESP%d: SHARDS %v / %v and SLOTS %v / %v disagree", n.Addr, proto, sh.Primaries, sh.Nodes, sl.Primaries, sl.Nodes)
			}
			if first == nil {
				first = sh
			} else if !first.Equal(sh) {
				t.Errorf("%s RESP%d disagrees with the first node", n.Addr, proto)
			}
		}
	}
	if first.Covered() != SlotCount || len(first.Primaries) != 3 || len(first.Nodes) != 6 {
		t.Fatalf("map: %d slots covered, primaries %v, nodes %v", first.Covered(), first.Primaries, first.Nodes)
	}
	conns := map[string]*valkeytest.Conn{}
	for _, p := range first.Primaries {
		conns[p] = valkeytest.Dial(t, p, 2)
	}
	for i := range 300 {
		k := "key:" + strconv.Itoa(i)
		addr, ok := first.Primary(Slot([]byte(k)))
		if !ok {
			t.Fatalf("no primary for %q", k)
		}
		if r := string(conns[addr].Do(t, "GET", k)); strings.HasPrefix(r, "-") {
			t.Fatalf("GET %s on %s, its primary by the map: %q", k, addr, r)
		}
	}
}

// A shard whose primary is marked failed serves none of its slots until a
// replica takes over; once one has, the shard lists both as "master", the
// old one with health "fail" (what Valkey sends), in either order, and the
// live one is the primary. An error reply is an error.
func TestMapFromShardsFailedPrimary(t *testing.T) {
	node := func(ip string, port int, role, health string) string {
		return "*8\r\n$2\r\nip\r\n$" + strconv.Itoa(len(ip)) + "\r\n" + ip + "\r\n$4\r\nport\r\n:" + strconv.Itoa(port) +
			"\r\n$4\r\nrole\r\n$" + strconv.Itoa(len(role)) + "\r\n" + role + "\r\n$6\r\nhealth\r\n$" + strconv.Itoa(len(health)) + "\r\n" + health + "\r\n"
	}
	shard := func(lo, hi int, nodes ...string) string {
		return "*4\r\n$5\r\nslots\r\n*2\r\n:" + strconv.Itoa(lo) + "\r\n:" + strconv.Itoa(hi) + "\r\n$5\r\nnodes\r\n*" + strconv.Itoa(len(nodes)) + "\r\n" + strings.Join(nodes, "")
	}
	reply := "*2\r\n" +
		shard(0, 8191, node("10.0.0.1", 7000, "master", "online"), node("10.0.0.2", 7001, "replica", "online")) +
		shard(8192, 16383, node("10.0.0.3", 7002, "master", "fail"), node("10.0.0.4", 7003, "replica", "online"))
	m, err := FromShards(parse(t, []byte(reply)), false, "10.0.0.1:7000")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := m.Primary(100); !ok || a != "10.0.0.1:7000" {
		t.Errorf("slot 100: %q %v", a, ok)
	}
	if a, ok := m.Primary(9000); ok {
		t.Errorf("slot 9000 of a failed primary routes to %q", a)
	}
	if m.Covered() != 8192 || len(m.Nodes) != 4 {
		t.Errorf("covered %d, nodes %v", m.Covered(), m.Nodes)
	}
	for _, order := range [][]string{
		{node("10.0.0.3", 7002, "master", "fail"), node("10.0.0.4", 7003, "master", "online")},
		{node("10.0.0.4", 7003, "master", "online"), node("10.0.0.3", 7002, "master", "fail")},
	} {
		m, err := FromShards(parse(t, []byte("*1\r\n"+shard(8192, 16383, order...))), false, "10.0.0.4:7003")
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.Primary(9000); !ok || a != "10.0.0.4:7003" {
			t.Errorf("after the failover, slot 9000 routes to %q %v, not the promoted replica", a, ok)
		}
	}
	if _, err := FromShards(parse(t, []byte("-ERR This instance has cluster support disabled\r\n")), false, ""); err == nil {
		t.Error("an error reply gave a map")
	}
}

// Served lists each primary once, ordered by its lowest slot, with its
// slots in order; slots no primary serves are in no list.
func TestServed(t *testing.T) {
	b := newBuilder()
	for _, r := range []struct {
		p      string
		lo, hi int
	}{{"b:1", 0, 2}, {"a:1", 3, 4}, {"b:1", 10, 10}} {
		if err := b.add(r.p, r.lo, r.hi); err != nil {
			t.Fatal(err)
		}
	}
	got := b.build().Served()
	want := []Served{{"b:1", []uint16{0, 1, 2, 10}}, {"a:1", []uint16{3, 4}}}
	if len(got) != len(want) {
		t.Fatalf("Served = %v", got)
	}
	for i := range want {
		if got[i].Primary != want[i].Primary || !slices.Equal(got[i].Slots, want[i].Slots) {
			t.Errorf("Served[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
