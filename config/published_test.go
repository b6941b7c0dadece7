package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// check-config's list of published passwords holds every password and
// password hash that the project's tests, docs and examples spell out in a
// configuration (password: X, password_sha256: H), so a file copied from
// any of them is refused.
func TestPublishedPasswordsListed(t *testing.T) {
	var files []string
	for _, g := range []string{"../e2e/*.go", "../*/*_test.go", "../cmd/*/*_test.go", "../docs/*.md", "../README.md",
		"../config.example.yaml", "../deploy/*/*.yaml", "../deploy/*/*/*.yaml", "../deploy/*/*/*/*.yaml"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("only %d files found", len(files))
	}
	re := regexp.MustCompile(`(?i)password(_sha256)?:[ \t]*"?([^\s"\\,}]+)`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "published_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			v := m[2]
			if strings.ContainsAny(v, "%&*`{.") || v == "is" || v == "check-upstream" || v == "printf" || v == "CHANGE-ME-in-a-Secret" {
				continue // a format verb, Go code or prose, not a password
			}
			seen++
			if m[1] != "" {
				if _, ok := publishedHashes[strings.ToLower(v)]; !ok && isSHA256Hex(v) {
					t.Errorf("%s: password_sha256 %s is not the hash of a password in publishedPasswords", f, v)
				}
			} else if !published(v) {
				t.Errorf("%s: password %q is not in publishedPasswords", f, v)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("only %d passwords found: the pattern misses them", seen)
	}
}

// A configuration whose passwords are published is listed setting by
// setting; one with passwords of its own is not.
func TestPublishedSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "oncall"), []byte("0nc4ll\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "own"), []byte("a-password-of-our-own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "c.yaml")
	c, err := Parse(path, []byte("upstream:\n  password: change-me\nadmin:\n  password: s3cret\n  users:\n"+
		"    - {name: a, password_sha256: B428CF4D1139450E9D89E31AF0721625F90D3362B14787CC11ACBCDD953A0F7B}\n"+
		"    - {name: b, password_file: oncall}\n    - {name: c, password: v1ew}\n"+
		"    - {name: d, password_file: own}\n    - {name: e, password: x7-not-published}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`upstream.password: "change-me" is a password published`,
		`admin.password: "s3cret" is a password published`,
		`admin.users[0].password_sha256: is the SHA-256 of "0nc4ll", a password published`,
		`admin.users[1].password_file: "0nc4ll" is a password published`,
		`admin.users[2].password: "v1ew" is a password published`,
	}
	got := c.PublishedSecrets()
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("finding %d: %q, want it to start with %q", i, got[i], w)
		}
	}
	if c.Admin.Users[3].Password != "a-password-of-our-own" {
		t.Errorf("password_file not read: %q", c.Admin.Users[3].Password)
	}
	if r := c.Redacted(); r.Admin.Users[1].Password != Redacted || r.Admin.Users[1].PasswordFile == "" {
		t.Errorf("redacted: %+v", r.Admin.Users[1])
	}

	for _, bad := range []struct{ yaml, want string }{
		{"admin:\n  users:\n    - {name: a, password: p, password_file: own}\n", "admin.users[0].password_file: is set together with password or password_sha256"},
		{"admin:\n  users:\n    - {name: a, password_file: missing}\n", `admin.users[0].password_file: "` + filepath.Join(dir, "missing") + `" does not exist`},
	} {
		if _, err := Parse(path, []byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
