package cluster

import (
	"errors"
	"testing"
)

// mapOf is a map of three primaries a, b, c (nodes a, b, c and their
// replicas ar, br, cr) with slot 0 served by first.
func mapOf(first string) *Map {
	b := newBuilder()
	for _, n := range []string{"a", "b", "c", "ar", "br", "cr"} {
		b.nodes[n] = true
	}
	if err := b.add(first, 0, 0); err != nil {
		panic(err)
	}
	_ = b.add("a", 1, 5000)
	_ = b.add("b", 5001, 10000)
	_ = b.add("c", 10001, SlotCount-1)
	return b.build()
}

// Agree believes the first map two nodes give: a node that still gives the
// old map (partitioned from the others) neither keeps nor moves it alone,
// whichever order the nodes are asked in; nodes that cannot be read are
// passed over; nodes a map names are asked after the candidates; a lone
// node is believed only as a cluster of one.
func TestAgree(t *testing.T) {
	old, moved := mapOf("a"), mapOf("ar") // slot 0 failed over from a to ar
	views := map[string]*Map{"a": old, "b": moved, "c": moved, "ar": moved, "br": moved, "cr": moved}
	read := func(addr string) (*Map, error) {
		if m, ok := views[addr]; ok {
			return m, nil
		}
		return nil, errors.New("connection refused")
	}
	for _, order := range [][]string{{"a", "b", "c"}, {"b", "a", "c"}, {"dead", "a", "b", "c"}, {"a"}} {
		m, _, errs := Agree(order, read)
		if !m.Equal(moved) {
			t.Errorf("asked %v: believed slot 0 on %s (errors %v), want ar, as the others give", order, slot0(m), errs)
		}
	}
	views["b"], views["c"], views["ar"], views["br"], views["cr"] = old, old, old, old, old
	views["a"] = moved // now the odd one out gives the new map
	if m, disagreed, _ := Agree([]string{"a", "b", "c"}, read); !m.Equal(old) || !disagreed {
		t.Errorf("a lone new map was believed: slot 0 on %s (disagreed %v)", slot0(m), disagreed)
	}
	rogue := func(addr string) (*Map, error) {
		b := newBuilder()
		b.nodes[addr] = true
		_ = b.add(addr, 0, SlotCount-1)
		return b.build(), nil
	}
	if m, _, _ := Agree([]string{"solo"}, rogue); m == nil || m.Covered() != SlotCount {
		t.Errorf("a cluster of one node was not believed: slot 0 on %s", slot0(m))
	}
	if m, disagreed, errs := Agree([]string{"x", "y"}, rogue); m != nil || !disagreed || len(errs) != 1 {
		t.Errorf("two one-node clusters that differ: slot 0 on %s, disagreed %v, errors %v", slot0(m), disagreed, errs)
	}
	if m, disagreed, errs := Agree([]string{"dead1", "dead2"}, read); m != nil || disagreed || len(errs) != 2 {
		t.Errorf("no node read: slot 0 on %s, disagreed %v, errors %v", slot0(m), disagreed, errs)
	}
}

// slot0 names where a map sends slot 0 ("no map", "no primary").
func slot0(m *Map) string {
	if m == nil {
		return "no map"
	}
	if a, ok := m.Primary(0); ok {
		return a
	}
	return "no primary"
}
