package main

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/internal/cmdgrammar"
)

// The judge: each kind of change is found; a lock whose token the line
// passed, and then lockproxy's keys, may change; a TTL may run down with
// the time that passed, not faster and never up.
func TestDiff(t *testing.T) {
	at := time.Unix(1000, 0)
	base := &snapshot{at: at, keys: map[string]keyState{
		"0/v:lock":                    {typ: "string", val: "tok", pttl: 600000},
		"0/{v:lock}:lockproxy:owners": {typ: "hash", val: "a=1", pttl: 1200000},
		"2/{o}:data":                  {typ: "string", val: "d", pttl: -1},
	}, global: map[string]string{"acl": "user default on", "config": "port=1"}}
	later := func(mod func(s *snapshot), after time.Duration) *snapshot {
		s := &snapshot{at: at.Add(after), keys: map[string]keyState{}, global: map[string]string{}}
		for k, v := range base.keys {
			if v.pttl > 0 { // ran down with the time that passed
				v.pttl -= after.Milliseconds()
			}
			s.keys[k] = v
		}
		for k, v := range base.global {
			s.global[k] = v
		}
		mod(s)
		return s
	}
	for _, c := range []struct {
		name    string
		mod     func(s *snapshot)
		allowed map[string]bool
		want    string // a substring of the one diff; "" = no diff
	}{
		{"unchanged", func(*snapshot) {}, nil, ""},
		{"value", func(s *snapshot) { s.keys["2/{o}:data"] = keyState{typ: "string", val: "x", pttl: -1} }, nil, "2/{o}:data changed"},
		{"type", func(s *snapshot) { s.keys["0/v:lock"] = keyState{typ: "hash", val: "tok", pttl: 1} }, nil, "0/v:lock changed"},
		{"gone", func(s *snapshot) { delete(s.keys, "0/v:lock") }, nil, "0/v:lock is gone"},
		{"appeared", func(s *snapshot) { s.keys["0/{lockproxy}:lockproxy:flush"] = keyState{typ: "string", pttl: -1} }, nil, "appeared"},
		{"ttl shortened", func(s *snapshot) { k := s.keys["0/v:lock"]; k.pttl = 1000; s.keys["0/v:lock"] = k }, nil, "TTL changed"},
		{"ttl raised", func(s *snapshot) { k := s.keys["0/v:lock"]; k.pttl = 900000; s.keys["0/v:lock"] = k }, nil, "TTL changed"},
		{"persisted", func(s *snapshot) { k := s.keys["0/v:lock"]; k.pttl = -1; s.keys["0/v:lock"] = k }, nil, "TTL changed"},
		{"acl", func(s *snapshot) { s.global["acl"] = "user default off" }, nil, "acl changed"},
		{"token passed", func(s *snapshot) {
			delete(s.keys, "0/v:lock")
			delete(s.keys, "0/{v:lock}:lockproxy:owners")
		}, map[string]bool{"0/v:lock": true}, ""},
		{"token passed, guarded data", func(s *snapshot) { delete(s.keys, "2/{o}:data") }, map[string]bool{"0/v:lock": true}, "2/{o}:data is gone"},
	} {
		got := diff(base, later(c.mod, 5*time.Second), c.allowed)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: diffs %q", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: diffs %q, want one with %q", c.name, got, c.want)
		}
	}
	if !needsRestart([]string{`config changed: "a" -> "b"`}) || needsRestart([]string{"0/v:lock is gone"}) {
		t.Error("needsRestart")
	}
}

// The standalone world as the fuzzer builds it: armed (owner records, a
// stranger's DEL refused), its judge sees a change made behind
// lockproxy's back, restore undoes it (FLUSHALL, or a restart for a
// configuration change), and lines run through the runner are each
// judged three ways.
func TestWorld(t *testing.T) {
	w, err := newWorld()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if d := diff(w.base, mustRead(t, w), nil); len(d) != 0 {
		t.Fatalf("the world changed by itself: %q", d)
	}
	w.direct[2].Del(ctx, stringLock)
	if d := diff(w.base, mustRead(t, w), nil); len(d) == 0 || !strings.Contains(strings.Join(d, " "), "2/v:lock is gone") {
		t.Fatalf("a DEL behind lockproxy's back: diffs %q", d)
	}
	if err := w.restore(false); err != nil {
		t.Fatal(err)
	}
	if d := diff(w.base, mustRead(t, w), nil); len(d) != 0 {
		t.Fatalf("after restore: %q", d)
	}
	w.direct[0].ConfigSet(ctx, "maxmemory", "12345678")
	d := diff(w.base, mustRead(t, w), nil)
	if !needsRestart(d) {
		t.Fatalf("CONFIG SET behind lockproxy's back: diffs %q", d)
	}
	if err := w.restore(true); err != nil {
		t.Fatal(err)
	}
	if d := diff(w.base, mustRead(t, w), nil); len(d) != 0 || w.direct[0].ConfigGet(ctx, "maxmemory").Val()["maxmemory"] != "0" {
		t.Fatalf("after restart: %q", d)
	}

	or, err := newOracle(false)
	if err != nil {
		t.Fatal(err)
	}
	defer or.close()
	dumps, err := or.dumps()
	if err != nil {
		t.Fatal(err)
	}
	rep := newReport(1)
	r := &runner{rng: rand.New(rand.NewPCG(1, 1)), oracle: or, rep: rep, gate: true, log: t.Logf}
	p := pools(dumps)
	// GET changes nothing (it is no fuzzed command, but the runner takes
	// any): every send of it is harmless or refused, none failed.
	get := &cmdgrammar.Command{Words: []string{"GET"}, Args: []cmdgrammar.Arg{{Name: "key", Type: "key"}}}
	for i := 0; i < 20; i++ {
		if err := r.line(w, p, or, get); err != nil {
			t.Fatal(err)
		}
	}
	tl := rep.commands["GET"]
	sent := 0
	for _, m := range modes {
		for _, n := range tl.byMode[m] {
			sent += n
		}
		if tl.byMode[m][failed] != 0 {
			t.Errorf("GET failed %d times sent %s: %+v", tl.byMode[m][failed], m, rep.failures)
		}
	}
	if tl.lines != 20 || sent != 60 || tl.oracleAccepted+tl.oracleRefuse+tl.oracleNoReply != 20 || tl.byMode[modePlain][harmless] == 0 {
		t.Fatalf("20 lines of GET: %+v, %d sends", tl, sent)
	}
	// The judges agree on a read (one of lockproxy's own keys named in
	// KEYS is a known difference, reported, not counted).
	if j := rep.judges; j.compared != 20 || j.disagreements() != 0 || j.agreed == 0 {
		t.Fatalf("the judges on 20 lines of GET: %+v", j)
	}
}

func mustRead(t *testing.T, w *world) *snapshot {
	t.Helper()
	s, err := w.read(true)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
