package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upstream.password from a file (relative to the config file) or the
// environment; on main the password could only be written in the YAML.
func TestUpstreamPasswordSources(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "lockproxy.yaml")
	c, err := Parse(path, []byte("upstream:\n  password_file: pw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Upstream.Password != "s3cret" {
		t.Errorf("password from file: %q", c.Upstream.Password)
	}
	if r := c.Redacted(); r.Upstream.Password != Redacted {
		t.Errorf("redacted: %q", r.Upstream.Password)
	}

	t.Setenv(EnvUpstreamPassword, "fromenv")
	if c, err = Parse(path, []byte("{}\n")); err != nil || c.Upstream.Password != "fromenv" {
		t.Errorf("password from the environment: %q %v", c.Upstream.Password, err)
	}
	if c, err = Parse(path, []byte("upstream:\n  password: inline\n")); err != nil || c.Upstream.Password != "inline" {
		t.Errorf("the file's password wins over the environment: %q %v", c.Upstream.Password, err)
	}

	_, err = Parse(path, []byte("upstream:\n  password: a\n  password_file: pw\n"))
	if err == nil || !strings.Contains(err.Error(), "lockproxy.yaml:3: upstream.password_file: cannot be set with upstream.password") {
		t.Errorf("both: %v", err)
	}
	_, err = Parse(path, []byte("upstream:\n  password_file: missing\n"))
	if err == nil || !strings.Contains(err.Error(), `upstream.password_file: "`+filepath.Join(dir, "missing")+`" does not exist`) {
		t.Errorf("missing file: %v", err)
	}
}
