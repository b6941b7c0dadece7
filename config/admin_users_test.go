package config

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// sha256 of "password", as sha256sum prints it.
const passwordSHA = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"

func TestAdminUsers(t *testing.T) {
	src := "admin:\n  password: s3cret\n  users:\n    - {name: viewer, password: v1ew}\n" +
		"    - name: oncall\n      password_sha256: " + passwordSHA + "\n      role: operate\n"
	c, err := Parse("u.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []AdminUser{
		{Name: "viewer", Password: "v1ew", Role: AdminRead}, // role defaults to read
		{Name: "oncall", PasswordSHA256: passwordSHA, Role: AdminOperate},
	}
	if !reflect.DeepEqual(c.Admin.Users, want) {
		t.Fatalf("users %+v, want %+v", c.Admin.Users, want)
	}

	r := c.Redacted()
	if r.Admin.Users[0].Password != Redacted || r.Admin.Users[1].PasswordSHA256 != Redacted || r.Admin.Users[1].Password != "" {
		t.Errorf("users not redacted: %+v", r.Admin.Users)
	}
	if c.Admin.Users[0].Password != "v1ew" {
		t.Error("Redacted changed the original's users")
	}
	out, _ := yaml.Marshal(r)
	if strings.Contains(string(out), "v1ew") || strings.Contains(string(out), passwordSHA) {
		t.Errorf("marshalled redacted config leaks a user's password:\n%s", out)
	}
	out, _ = yaml.Marshal(c)
	again, err := Parse("marshalled.yaml", out)
	if err != nil || !reflect.DeepEqual(again.Admin, c.Admin) {
		t.Errorf("round trip changed admin: %v\n%s", err, out)
	}
}

func TestAdminUsersErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"not a list", "admin:\n  users: {name: a}\n",
			[]string{`c.yaml:2: admin.users: expected a list of users (lines starting with -), got a mapping`}},
		{"not a user", "admin:\n  users:\n    - viewer\n",
			[]string{`c.yaml:3: admin.users[0]: expected a user (name: ..., password: ..., role: ...), got the value "viewer"`}},
		{"no name, no password", "admin:\n  users:\n    - role: read\n",
			[]string{`c.yaml:3: admin.users[0].name: is required: the name given to LOCKPROXY AUTH <name> <password>`,
				`c.yaml:3: admin.users[0].password: is required: set password, or password_sha256 to the hex SHA-256 of the password`}},
		{"bad role", "admin:\n  users:\n    - name: a\n      password: p\n      role: admin\n",
			[]string{`c.yaml:5: admin.users[0].role: "admin" is not one of read, operate`}},
		{"space in name", "admin:\n  users:\n    - {name: \"on call\", password: p}\n",
			[]string{`c.yaml:3:14: admin.users[0].name: "on call" contains a space or control character; valkey-cli could not send it as one argument`}},
		{"repeated name", "admin:\n  users:\n    - {name: a, password: p}\n    - {name: a, password: q}\n",
			[]string{`c.yaml:4:14: admin.users[1].name: "a" is already the name of admin.users[0]; each user needs a name of its own`}},
		{"default taken by admin.password", "admin:\n  password: x\n  users:\n    - {name: default, password: p}\n",
			[]string{`c.yaml:4:14: admin.users[0].name: "default" is already the name of admin.password; each user needs a name of its own`}},
		{"both passwords", "admin:\n  users:\n    - name: a\n      password: p\n      password_sha256: " + passwordSHA + "\n",
			[]string{`c.yaml:5: admin.users[0].password_sha256: is set together with password; keep one of them`}},
		{"hash not hex", "admin:\n  users:\n    - name: a\n      password_sha256: abc\n",
			[]string{`c.yaml:4: admin.users[0].password_sha256: is not 64 hexadecimal digits (the output of: printf %s 'password' | sha256sum)`}},
		{"unknown key", "admin:\n  users:\n    - name: a\n      pasword: p\n",
			[]string{`c.yaml:3: admin.users[0].password: is required: set password, or password_sha256 to the hex SHA-256 of the password`,
				`c.yaml:4: admin.users[0].pasword: unknown key (did you mean password?)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(c.yaml))
			var got []string
			for _, e := range ConfigErrors(err) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("errors:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}
