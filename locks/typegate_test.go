package locks

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/internal/valkeytest"
	"github.com/lockproxy/lockproxy/rewrite"
)

// The type gate's EVAL, run by a real Valkey: WRONGTYPE when a key holds
// a type the command cannot work on, the refusal's marker otherwise (an
// absent key included).
func TestTypeGateCommand(t *testing.T) {
	srv := valkeytest.Start(t)
	c := valkeytest.Dial(t, srv.Addr, 2)
	c.Do(t, "SET", "lock", "tok")
	c.Do(t, "HSET", "h", "f", "v")
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"lock"}, "-WRONGTYPE "},
		{[]string{"h"}, "-" + rewrite.TypeGateRefused},
		{[]string{"absent"}, "-" + rewrite.TypeGateRefused},
		{[]string{"h", "lock"}, "-WRONGTYPE "},
	} {
		var keys [][]byte
		for _, k := range tc.keys {
			keys = append(keys, []byte(k))
		}
		args := append([]string{"EVAL", rewrite.TypeGate, strconv.Itoa(len(keys))}, tc.keys...)
		args = append(args, rewrite.TypeGateRefused, "hash")
		if got := TypeGateCommand(keys, []string{"hash"}); !bytes.Equal(got, valkeytest.Command(args...)) {
			t.Fatalf("%v: %q, want %q", tc.keys, got, valkeytest.Command(args...))
		}
		if got := string(c.Do(t, args...)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.keys, got, tc.want)
		}
	}
}
