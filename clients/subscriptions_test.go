package clients

import "testing"

func TestSubscriptions(t *testing.T) {
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	type counts struct{ sub, psub, ssub int }
	var u Subscriptions
	steps := []struct {
		kind  SubKind
		unsub bool
		chans [][]byte
		want  counts
	}{
		{Channel, false, b("a", "b"), counts{2, 0, 0}},
		{Channel, false, b("a"), counts{2, 0, 0}}, // again: counted once
		{Pattern, false, b("n*"), counts{2, 1, 0}},
		{Shard, false, b("s1", "s2"), counts{2, 1, 2}},
		{Channel, true, b("a", "nope"), counts{1, 1, 2}},
		{Pattern, true, nil, counts{1, 0, 2}}, // all of its kind
		{Channel, true, nil, counts{0, 0, 2}},
	}
	for i, st := range steps {
		u.Apply(st.kind, st.unsub, st.chans)
		var got counts
		got.sub, got.psub, got.ssub = u.Counts()
		if got != st.want {
			t.Fatalf("step %d: counts %+v, want %+v", i, got, st.want)
		}
	}
	if !u.Any() || !u.HasShard("s1") || u.HasShard("a") {
		t.Fatal("Any or HasShard wrong with two shard channels left")
	}
	if left, had := u.DropShard("s1"); left != 1 || !had {
		t.Fatalf("DropShard(s1) = %d, %v", left, had)
	}
	if left, had := u.DropShard("s1"); left != 1 || had {
		t.Fatalf("DropShard(s1) again = %d, %v", left, had)
	}
	u.Clear()
	if u.Any() {
		t.Fatal("subscriptions left after Clear")
	}
}
