package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/lockproxy/lockproxy/config"
)

func TestLogins(t *testing.T) {
	sum := sha256.Sum256([]byte("by-hash"))
	users := []config.AdminUser{
		{Name: "ops", Password: "op", Role: config.AdminOperate},
		{Name: "viewer", Password: "view"},
		{Name: "hashed", PasswordSHA256: hex.EncodeToString(sum[:]), Role: config.AdminRead},
	}
	l := NewLogins("root", users)
	cases := []struct {
		user, pass string
		role       config.AdminRole
		ok         bool
	}{
		{config.DefaultAdminUser, "root", config.AdminOperate, true},
		{"ops", "op", config.AdminOperate, true},
		{"viewer", "view", config.AdminRead, true},
		{"hashed", "by-hash", config.AdminRead, true},
		{"ops", "view", "", false},
		{"nobody", "root", "", false},
		{"hashed", hex.EncodeToString(sum[:]), "", false},
	}
	for _, c := range cases {
		if role, ok := l.check(c.user, []byte(c.pass)); role != c.role || ok != c.ok {
			t.Errorf("%s/%s: got %q %v, want %q %v", c.user, c.pass, role, ok, c.role, c.ok)
		}
	}
	if l.Open() || !l.Named() {
		t.Errorf("open %v named %v", l.Open(), l.Named())
	}
	if !l.same("root", users) || l.same("root2", users) || l.same("root", users[:1]) {
		t.Error("same does not tell the settings apart")
	}
	if open := NewLogins("", nil); !open.Open() || open.Named() {
		t.Error("no credentials is not open")
	}
}
