package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// EnvUpstreamPassword is the environment variable that gives
// upstream.password when the file sets neither password nor password_file.
const EnvUpstreamPassword = "LOCKPROXY_UPSTREAM_PASSWORD"

// readSecrets fills upstream.password from password_file, or from the
// environment, and each admin user's password from its password_file, so
// that the file need not hold them. Every reload reads them again.
func (c *Config) readSecrets(v *validator) {
	u := &c.Upstream
	switch {
	case u.PasswordFile != "" && u.Password != "":
		v.errf("upstream.password_file", "cannot be set with upstream.password: keep one of them")
	case u.PasswordFile != "":
		u.Password = readPasswordFile(v, "upstream.password_file", u.PasswordFile)
	case u.Password == "":
		u.Password = os.Getenv(EnvUpstreamPassword)
	}
	for i := range c.Admin.Users {
		a := &c.Admin.Users[i]
		if a.PasswordFile != "" && a.Password == "" && a.PasswordSHA256 == "" {
			a.Password = readPasswordFile(v, fmt.Sprintf("admin.users[%d].password_file", i), a.PasswordFile)
		}
	}
}

// readPasswordFile is the password in the file name (setting path), one
// trailing newline dropped; "" after reporting why there is none.
func readPasswordFile(v *validator, path, name string) string {
	if !checkFile(v, path, name) {
		return ""
	}
	b, err := os.ReadFile(name)
	if err != nil {
		v.errf(path, "%s cannot be read: %v", strconv.Quote(name), err)
		return ""
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		v.errf(path, "%s is empty", strconv.Quote(name))
	}
	return pw
}
