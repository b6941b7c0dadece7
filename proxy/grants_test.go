package proxy

import (
	"testing"
	"time"
)

// TestGrantsDropAllocs: a release's drop of its record allocates nothing
// (the key arrives as the command's bytes).
func TestGrantsDropAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	gs := newGrants(100, time.Minute)
	now := time.Now()
	key := []byte("resource:lock")
	g := &grant{owner: "conn:1", number: 1}
	n := testing.AllocsPerRun(1000, func() {
		gs.put("resource:lock", g, now)
		if g, _ := gs.drop(key, "conn:1", now); g == nil {
			t.Fatal("drop found no record")
		}
	})
	if n > 1 { // put's new slice of records; drop adds none
		t.Errorf("put + drop allocate %v times, want at most 1", n)
	}
}

// TestGrantsRecords: one record per owner and key, several owners per key,
// removal by key bytes or by owner, and the count kept in step.
func TestGrantsRecords(t *testing.T) {
	now := time.Now()
	gs := newGrants(10, time.Minute)
	a := &grant{owner: "conn:a", number: 1, expires: now.Add(-time.Second)} // lapsed
	b := &grant{owner: "conn:b", number: 2, expires: now.Add(time.Minute)}
	gs.put("k:lock", a, now)
	gs.put("k:lock", b, now)
	gs.put("j:lock", &grant{owner: "conn:a", number: 3}, now)
	if gs.len() != 3 {
		t.Fatalf("len %d, want 3", gs.len())
	}
	if h := gs.holder([]byte("k:lock"), "conn:a", now); h != "conn:b" {
		t.Errorf("holder for a = %q, want conn:b", h)
	}
	a2 := &grant{owner: "conn:a", number: 4, expires: now.Add(time.Minute)}
	gs.put("k:lock", a2, now) // replaces a's record, adds none
	if g, ok := gs.get([]byte("k:lock"), "conn:a"); !ok || g != a2 || gs.len() != 3 {
		t.Errorf("after replacing: get %v %v, len %d; want a2, 3", g, ok, gs.len())
	}
	if g, lapsed := gs.drop([]byte("k:lock"), "conn:b", now); g != b || lapsed {
		t.Errorf("drop b = %v, %v; want b, not lapsed", g, lapsed)
	}
	if g, _ := gs.drop([]byte("k:lock"), "conn:b", now); g != nil {
		t.Errorf("second drop of b found %v", g)
	}
	if _, ok := gs.get([]byte("k:lock"), "conn:a"); !ok {
		t.Error("dropping b's record took a's")
	}
	gs.dropOwner("conn:a")
	if len(gs.byOwner) != 1 {
		t.Errorf("b, still connected, lost its (empty) key set: %d owners", len(gs.byOwner))
	}
	gs.dropOwner("conn:b")
	if gs.len() != 0 || len(gs.byKey) != 0 || len(gs.byOwner) != 0 {
		t.Errorf("after dropOwner: len %d, %d keys, %d owners; want 0, 0, 0", gs.len(), len(gs.byKey), len(gs.byOwner))
	}
}

// TestGrantsSweep: a record lapsed longer than keepLapsed goes, and so does
// the key set of an owner that had only it (its connection already gone),
// while a live record stays.
func TestGrantsSweep(t *testing.T) {
	now := time.Now()
	gs := newGrants(10, time.Second)
	gs.put("old:lock", &grant{owner: "conn:gone", number: 1, expires: now.Add(-time.Minute)}, now)
	gs.put("new:lock", &grant{owner: "conn:here", number: 2, expires: now.Add(time.Minute)}, now)
	gs.mu.Lock()
	gs.sweepLocked(now)
	gs.mu.Unlock()
	if _, ok := gs.get([]byte("old:lock"), "conn:gone"); ok {
		t.Error("the lapsed record survived the sweep")
	}
	if _, ok := gs.get([]byte("new:lock"), "conn:here"); !ok {
		t.Error("the sweep took a live record")
	}
	if _, ok := gs.byOwner["conn:gone"]; ok || gs.len() != 1 || gs.lapsed != 1 {
		t.Errorf("after the sweep: gone's set kept %v, len %d, lapsed %d; want false, 1, 1", ok, gs.len(), gs.lapsed)
	}
}
