package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/lockproxy/lockproxy/config"
)

// noLimit never blocks a host.
type noLimit struct{}

func (noLimit) Blocked(string) time.Duration { return 0 }
func (noLimit) Failed(string) bool           { return false }

// Who may run what: the code word of each refusal, or "" where it may.
func TestDenied(t *testing.T) {
	users := []config.AdminUser{{Name: "ops", Password: "op", Role: config.AdminOperate}, {Name: "viewer", Password: "view"}}
	type ask struct {
		private, operate bool
		want             string
	}
	cases := []struct {
		name     string
		o        Options
		password string
		users    []config.AdminUser
		login    string // user logged in, "" none
		asks     []ask
	}{
		{"open on loopback", Options{Loopback: true}, "", nil, "",
			[]ask{{false, false, ""}, {true, true, ""}}},
		{"open elsewhere", Options{Listen: "0.0.0.0:6380"}, "", nil, "",
			[]ask{{false, false, "NOAUTH"}, {true, false, "NOAUTH"}}},
		{"open_read elsewhere", Options{Listen: "0.0.0.0:6380", OpenRead: true}, "", nil, "",
			[]ask{{false, false, ""}, {true, false, "NOAUTH"}, {false, true, "NOAUTH"}}},
		{"password, no login", Options{Loopback: true}, "pw", nil, "",
			[]ask{{false, false, "NOAUTH"}, {true, true, "NOAUTH"}}},
		{"password, open_read", Options{Loopback: true, OpenRead: true}, "pw", nil, "",
			[]ask{{false, false, ""}, {false, true, ""}, {true, false, "NOAUTH"}}},
		{"read user", Options{}, "", users, "viewer",
			[]ask{{false, false, ""}, {true, false, ""}, {false, true, "NOPERM"}}},
		{"operate user", Options{}, "", users, "ops",
			[]ask{{true, true, ""}}},
	}
	for _, c := range cases {
		boot := config.Config{Admin: config.AdminConfig{Password: c.password, Users: c.users}}
		c.o.Limiter = noLimit{}
		a := New(nil, c.o, boot)
		if c.login != "" {
			pass := map[string]string{"viewer": "view", "ops": "op"}[c.login]
			if got := string(a.auth(testConn{id: 1}, [][]byte{[]byte(c.login), []byte(pass)})); got != "+OK\r\n" {
				t.Fatalf("%s: AUTH: %q", c.name, got)
			}
		}
		for _, q := range c.asks {
			got := a.Denied(1, "LOCKPROXY X", q.private, q.operate)
			if word, _, _ := strings.Cut(got, " "); word != q.want {
				t.Errorf("%s, private %v operate %v: got %q, want code word %q", c.name, q.private, q.operate, got, q.want)
			}
		}
		a.Logout(1)
		if c.login != "" && a.Denied(1, "LOCKPROXY X", false, false) == "" {
			t.Errorf("%s: still logged in after Logout", c.name)
		}
	}
}
