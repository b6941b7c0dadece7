package config

import (
	"os"
	"strconv"
	"strings"
)

// EnvUpstreamPassword is the environment variable that gives
// upstream.password when the file sets neither password nor password_file.
const EnvUpstreamPassword = "LOCKPROXY_UPSTREAM_PASSWORD"

// readSecrets fills upstream.password from password_file, or from the
// environment, so that the file need not hold it. Every reload reads them
// again.
func (c *Config) readSecrets(v *validator) {
	u := &c.Upstream
	switch {
	case u.PasswordFile != "" && u.Password != "":
		v.errf("upstream.password_file", "cannot be set with upstream.password: keep one of them")
	case u.PasswordFile != "":
		if !checkFile(v, "upstream.password_file", u.PasswordFile) {
			return
		}
		b, err := os.ReadFile(u.PasswordFile)
		if err != nil {
			v.errf("upstream.password_file", "%s cannot be read: %v", strconv.Quote(u.PasswordFile), err)
			return
		}
		u.Password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if u.Password == "" {
			v.errf("upstream.password_file", "%s is empty", strconv.Quote(u.PasswordFile))
		}
	case u.Password == "":
		u.Password = os.Getenv(EnvUpstreamPassword)
	}
}
