package config

import (
	"strings"
	"testing"
)

// check-config warned about neither on main.
func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string // "" = no warning
	}{
		{"locks:\n  - pattern: \"*\"\n", `locks[0].pattern: "*" matches every key`},
		{"locks:\n  - pattern: \"*:lock\"\n", ""},
		{"listen: 127.0.0.1:6379\nupstream:\n  addr: 127.0.0.1:6379\n", "listen: 127.0.0.1:6379 is upstream.addr"},
		{"listen: :6379\nupstream:\n  addr: 127.0.0.1:6379\n", "is upstream.addr"},
		{"listen: localhost:6379\nupstream:\n  addr: 127.0.0.1:6379\n", "is upstream.addr"},
		{"listen: 127.0.0.1:6380\nupstream:\n  addr: 127.0.0.1:6379\n", ""},
		{"listen: 10.0.0.1:6379\nupstream:\n  addr: 10.0.0.2:6379\nadmin:\n  password: x\n", ""},
		{"listen: 0.0.0.0:6380\nupstream:\n  addr: valkey.internal:6380\nadmin:\n  password: x\n", ""},
		{"listen: 0.0.0.0:6380\n", "admin: listen 0.0.0.0:6380 is not loopback and no admin.password or admin.users is set"},
	} {
		c, err := Parse("x.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(c.Warnings(), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%q: warnings %q, want %q", tc.yaml, got, tc.want)
		}
	}
}
