package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// publishedPasswords are the passwords lockproxy's own tests, examples and
// docs spell out (e2e/, cmd/, config/, admin/, proxy/ tests, docs/*.md,
// deploy/), and the placeholders examples used to carry. Anyone can read
// them, so a configuration that logs in with one carries no secret. Add a
// password here when a test or doc publishes a new one.
var publishedPasswords = []string{
	"0nc4ll", "s3cret", "v1ew", "n3w", "view", "op", "password", "the password",
	"hunter2", "hunter3", "lockproxy-test-secret", "apw", "cpw", "pw", "replpw",
	"narrow", "pw-admin", "pw-upstream", "wrong", "inline", "fromenv", "0123",
	"change-me", "change-me-too", "changeme", "CHANGE-ME", "secret", "test",
	"abc", "other", "a", "p", "q", "x", "ops-pw", "upstreamSecret", "adminSecret",
	"viewerSecret", "view-pw", "(redacted)",
}

// publishedHashes maps the hex SHA-256 of each published password to it.
var publishedHashes = func() map[string]string {
	m := make(map[string]string, len(publishedPasswords))
	for _, pw := range publishedPasswords {
		sum := sha256.Sum256([]byte(pw))
		m[hex.EncodeToString(sum[:])] = pw
	}
	return m
}()

// PublishedSecrets lists the settings whose password (or password hash) is
// one that lockproxy's tests or docs publish, each naming its setting
// first. check-config refuses a file with any; the proxy logs them at
// start (its own tests run with such passwords).
func (c *Config) PublishedSecrets() []string {
	var out []string
	check := func(path, pw string) {
		if pw != "" && published(pw) {
			out = append(out, fmt.Sprintf("%s: %s is a password published in lockproxy's tests or docs: anyone can log in with it; set a password of your own (from a file: password_file)", path, strconv.Quote(pw)))
		}
	}
	check("upstream."+secretSetting(c.Upstream.PasswordFile), c.Upstream.Password)
	check("upstream.sentinel.password", c.Upstream.Sentinel.Password)
	check("admin.password", c.Admin.Password)
	for i, u := range c.Admin.Users {
		p := fmt.Sprintf("admin.users[%d]", i)
		check(p+"."+secretSetting(u.PasswordFile), u.Password)
		if pw, ok := publishedHashes[strings.ToLower(u.PasswordSHA256)]; ok {
			out = append(out, fmt.Sprintf("%s.password_sha256: is the SHA-256 of %s, a password published in lockproxy's tests or docs: anyone can log in with it; set the hash of a password of your own (printf %%s 'password' | sha256sum)", p, strconv.Quote(pw)))
		}
	}
	return out
}

func published(pw string) bool {
	sum := sha256.Sum256([]byte(pw))
	_, ok := publishedHashes[hex.EncodeToString(sum[:])]
	return ok
}

// secretSetting is the setting a password came from: password_file when
// file is set, else password.
func secretSetting(file string) string {
	if file != "" {
		return "password_file"
	}
	return "password"
}
