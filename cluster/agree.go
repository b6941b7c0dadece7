package cluster

import (
	"errors"
	"fmt"
	"slices"
)

// Agree finds the slot map two nodes give alike. It asks the candidates in
// order (read does the asking: CLUSTER SHARDS of one node) and, after
// them, the nodes each map names that are not candidates already: with a
// single seed, or seeds all of one shard, they are where the second word
// comes from. The first map a second node confirms is the one believed,
// whether it is the map the caller has now or a new one: so one node with
// a view of its own (partitioned from the others, or a one-node cluster
// claiming every slot) can neither move the caller's traffic nor keep it
// on a map the others have left (envoy#8099). A cluster of one node, the
// only candidate, is its own second word.
//
// With no map confirmed it returns nil, with the errors read gave and
// disagreed true when at least one map was given. Agree does no I/O of
// its own.
func Agree(candidates []string, read func(addr string) (*Map, error)) (m *Map, disagreed bool, errs []error) {
	candidates = slices.Clone(candidates)
	var seen []*Map                        // maps given so far, none confirmed yet
	for i := 0; i < len(candidates); i++ { // grows: see above
		addr := candidates[i]
		m, err := read(addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		for _, o := range seen {
			if m.Equal(o) {
				return m, len(seen) > 1, nil
			}
		}
		if len(candidates) == 1 && len(m.Nodes) == 1 {
			return m, false, nil // a cluster of one node, the only one named
		}
		seen = append(seen, m)
		for _, n := range m.Nodes {
			if !slices.Contains(candidates, n) {
				candidates = append(candidates, n)
			}
		}
	}
	if len(seen) > 0 {
		errs = append(errs, errors.New("no second node confirmed a slot map"))
	}
	return nil, len(seen) > 0, errs
}
