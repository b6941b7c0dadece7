package cluster

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/lockproxy/lockproxy/resp"
)

// Map says which primary serves each hash slot. It is immutable once built:
// the proxy swaps a whole new one in when the topology changes.
type Map struct {
	// Primaries are the primaries' addresses (host:port), sorted; owner
	// indexes them.
	Primaries []string
	// Nodes is every node named, primaries and replicas, sorted: where the
	// next refresh may ask.
	Nodes []string
	owner [SlotCount]int16 // index into Primaries; -1: no primary serves it
}

// Primary returns the address of the primary serving slot; ok is false when
// no primary does (the slot is unassigned, or its primary has failed).
func (m *Map) Primary(slot uint16) (addr string, ok bool) {
	i := m.owner[slot&(SlotCount-1)]
	if i < 0 {
		return "", false
	}
	return m.Primaries[i], true
}

// Covered reports how many slots have a primary.
func (m *Map) Covered() int {
	n := 0
	for _, o := range m.owner {
		if o >= 0 {
			n++
		}
	}
	return n
}

// Equal reports whether two maps route every slot to the same primary.
// Nodes is not compared: which replicas a node lists depends on its view of
// their health (CLUSTER SLOTS leaves out replicas not yet in sync), which
// changes nothing about where commands go.
func (m *Map) Equal(o *Map) bool {
	if m == nil || o == nil {
		return m == o
	}
	return slices.Equal(m.Primaries, o.Primaries) && m.owner == o.owner
}

// builder collects slot ranges per primary before the Map is sorted.
type builder struct {
	ranges map[string][][2]int
	nodes  map[string]bool
}

func (b *builder) add(primary string, lo, hi int) error {
	if lo < 0 || hi >= SlotCount || lo > hi {
		return fmt.Errorf("cluster: slot range %d-%d is not within 0-%d", lo, hi, SlotCount-1)
	}
	b.ranges[primary] = append(b.ranges[primary], [2]int{lo, hi})
	b.nodes[primary] = true
	return nil
}

func (b *builder) build() *Map {
	m := &Map{}
	for i := range m.owner {
		m.owner[i] = -1
	}
	for p := range b.ranges {
		m.Primaries = append(m.Primaries, p)
	}
	slices.Sort(m.Primaries)
	for i, p := range m.Primaries {
		for _, r := range b.ranges[p] {
			for s := r[0]; s <= r[1]; s++ {
				m.owner[s] = int16(i)
			}
		}
	}
	for n := range b.nodes {
		m.Nodes = append(m.Nodes, n)
	}
	slices.Sort(m.Nodes)
	return m
}

func newBuilder() *builder {
	return &builder{ranges: map[string][][2]int{}, nodes: map[string]bool{}}
}

// FromShards builds a Map from a CLUSTER SHARDS reply (Valkey 7+), in RESP2
// or RESP3. A shard's primary is its node with role "master" whose health is
// not "fail" (Valkey's word; its documentation says "failed", so both are
// read): after a failover the shard lists its old primary, failed, beside
// the promoted replica, in no fixed order. A shard without a live primary
// serves none of its slots. With tls, a
// node's tls-port is used where it has one. self is the address the reply
// came from: a node that names itself with an empty endpoint is found there.
func FromShards(v resp.Value, tls bool, self string) (*Map, error) {
	if v.Type == '-' {
		return nil, errors.New(string(v.Str))
	}
	if !isList(v) {
		return nil, fmt.Errorf("cluster: CLUSTER SHARDS reply is not a list (type %q)", v.Type)
	}
	b := newBuilder()
	for _, sh := range v.Elems {
		f := fields(sh)
		slotsV, nodesV := f["slots"], f["nodes"]
		var primary string
		for _, nv := range nodesV.Elems {
			nf := fields(nv)
			addr := nodeAddr(nf, tls, self)
			if addr == "" {
				continue
			}
			b.nodes[addr] = true
			if string(nf["role"].Str) == "master" && !failed(string(nf["health"].Str)) {
				primary = addr
			}
		}
		if primary == "" || len(slotsV.Elems)%2 != 0 {
			continue
		}
		for i := 0; i < len(slotsV.Elems); i += 2 {
			if err := b.add(primary, int(slotsV.Elems[i].Int), int(slotsV.Elems[i+1].Int)); err != nil {
				return nil, err
			}
		}
	}
	return b.build(), nil
}

// FromSlots builds a Map from a CLUSTER SLOTS reply (older servers, and the
// fallback when CLUSTER SHARDS is refused): ranges of [start, end, primary,
// replicas...], each node as [host, port, id, ...].
func FromSlots(v resp.Value, self string) (*Map, error) {
	if v.Type == '-' {
		return nil, errors.New(string(v.Str))
	}
	if !isList(v) {
		return nil, fmt.Errorf("cluster: CLUSTER SLOTS reply is not a list (type %q)", v.Type)
	}
	b := newBuilder()
	for _, r := range v.Elems {
		if len(r.Elems) < 3 {
			continue
		}
		var addrs []string
		for _, nv := range r.Elems[2:] {
			if len(nv.Elems) < 2 {
				continue
			}
			host := string(nv.Elems[0].Str)
			if host == "" || host == "?" {
				host, _, _ = net.SplitHostPort(self)
			}
			addrs = append(addrs, net.JoinHostPort(host, strconv.FormatInt(nv.Elems[1].Int, 10)))
		}
		if len(addrs) == 0 {
			continue
		}
		for _, a := range addrs[1:] {
			b.nodes[a] = true
		}
		if err := b.add(addrs[0], int(r.Elems[0].Int), int(r.Elems[1].Int)); err != nil {
			return nil, err
		}
	}
	return b.build(), nil
}

// failed reports a CLUSTER SHARDS health that rules a node out: "fail" is
// what Valkey and Redis send (cluster_legacy.c), "failed" what their
// documentation says.
func failed(health string) bool { return health == "fail" || health == "failed" }

func isList(v resp.Value) bool { return v.Type == '*' || v.Type == '~' }

// fields reads a RESP2 flat array of key, value pairs, or a RESP3 map.
func fields(v resp.Value) map[string]resp.Value {
	m := make(map[string]resp.Value, len(v.Elems)/2)
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[string(v.Elems[i].Str)] = v.Elems[i+1]
	}
	return m
}

// nodeAddr is host:port of a CLUSTER SHARDS node: its endpoint (what the
// node announces for clients), else its ip; "" when it has no port.
func nodeAddr(nf map[string]resp.Value, tls bool, self string) string {
	port := nf["port"].Int
	if tp, ok := nf["tls-port"]; tls && ok && tp.Int > 0 {
		port = tp.Int
	}
	if port <= 0 {
		return ""
	}
	host := string(nf["endpoint"].Str)
	if host == "" || host == "?" {
		host = string(nf["ip"].Str)
	}
	if host == "" || host == "?" {
		host, _, _ = net.SplitHostPort(self)
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10))
}

// Served is a primary and the slots it serves, ascending.
type Served struct {
	Primary string
	Slots   []uint16
}

// Served lists the primaries that serve slots, in the order of the lowest
// slot each serves.
func (m *Map) Served() []Served {
	var out []Served
	at := make(map[int16]int, len(m.Primaries))
	for slot, o := range m.owner {
		if o < 0 {
			continue
		}
		i, seen := at[o]
		if !seen {
			i = len(out)
			at[o] = i
			out = append(out, Served{Primary: m.Primaries[o]})
		}
		out[i].Slots = append(out[i].Slots, uint16(slot))
	}
	return out
}
