package clients

import (
	"strings"
	"testing"
)

func TestLogins(t *testing.T) {
	var l Logins
	if _, ok := l.Creds(LoginID("u", "p")); ok {
		t.Fatal("an empty registry has a login")
	}
	a := l.Add("alice", "secret")
	if strings.Contains(a, "secret") || !strings.HasPrefix(a, "alice\x00") {
		t.Fatalf("login id %q holds the password or not the user first", a)
	}
	if b := l.Add("alice", "secret"); b != a {
		t.Fatalf("the same credentials got two ids: %q, %q", a, b)
	}
	for _, c := range []struct{ user, pass string }{{"", "secret"}, {"alice", "other"}, {"bob", "secret"}} {
		if LoginID(c.user, c.pass) == a {
			t.Errorf("%q/%q has alice's id", c.user, c.pass)
		}
	}
	pw := l.Add("", "only-a-password")
	for id, want := range map[string]Creds{a: {"alice", "secret"}, pw: {"", "only-a-password"}} {
		if got, ok := l.Creds(id); !ok || got != want {
			t.Errorf("Creds(%q) = %+v, %v; want %+v", id, got, ok, want)
		}
	}
}
