package rewrite_test

import (
	"strconv"
	"testing"

	"github.com/lockproxy/lockproxy/internal/luaeval"
	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/rewrite"
)

// TypeGate answers the same bytes from Valkey and from luaeval: WRONGTYPE
// when a key holds a type outside the command's, the refusal marker when
// every key is absent or of a fitting type.
func TestTypeGate(t *testing.T) {
	srv := valkeytest.Start(t)
	c := valkeytest.Dial(t, srv.Addr, 2)
	st := luaeval.New()
	setup := [][]string{
		{"SET", "s:lock", "tok"},
		{"HSET", "h:lock", "owner", "1"},
		{"ZADD", "z:lock", "1", "m"},
	}
	for _, s := range setup {
		c.Do(t, s...)
		st.Do(s...)
	}
	const wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	const refused = "-" + rewrite.TypeGateRefused + "\r\n"
	for _, tc := range []struct {
		keys  []string
		types []string
		want  string
	}{
		{[]string{"s:lock"}, []string{"list"}, wrong},
		{[]string{"s:lock"}, []string{"hash"}, wrong},
		{[]string{"h:lock"}, []string{"hash"}, refused},
		{[]string{"h:lock"}, []string{"set"}, wrong},
		{[]string{"z:lock"}, []string{"zset"}, refused},
		{[]string{"gone:lock"}, []string{"list"}, refused},
		{[]string{"gone:lock", "s:lock"}, []string{"list"}, wrong},
		{[]string{"h:lock", "gone:lock"}, []string{"set", "zset", "hash"}, refused},
	} {
		args := append([]string{"EVAL", rewrite.TypeGate, strconv.Itoa(len(tc.keys))}, tc.keys...)
		argv := append([]string{rewrite.TypeGateRefused}, tc.types...)
		args = append(args, argv...)
		got := string(c.Do(t, args...))
		if got != tc.want {
			t.Errorf("Valkey, keys %q types %q: %q, want %q", tc.keys, tc.types, got, tc.want)
		}
		if off := string(st.Eval(rewrite.TypeGate, tc.keys, argv)); off != got {
			t.Errorf("luaeval, keys %q types %q: %q, Valkey %q", tc.keys, tc.types, off, got)
		}
	}
}
