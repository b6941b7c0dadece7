package admin

import (
	"errors"
	"slices"
	"testing"

	"github.com/lockproxy/lockproxy/config"
)

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fields(fs []Field) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		m[f.K] = f.V.(string)
	}
	return m
}

const base = `
listen: 127.0.0.1:6380
upstream:
  addr: 127.0.0.1:6379
  password: hunter2
admin:
  password: s3cret
locks:
  - pattern: "lock:*"
    release: reject
`

// Paths are the file's, values as the file writes them; with redact every
// secret that is set reads (redacted) and the rest is unchanged.
func TestConfigFields(t *testing.T) {
	c := parse(t, base)
	plain := fields(ConfigFields(c, false))
	red := fields(ConfigFields(c, true))
	for k, want := range map[string]string{
		"listen":            "127.0.0.1:6380",
		"upstream.addr":     "127.0.0.1:6379",
		"locks[0].pattern":  "lock:*",
		"locks[0].release":  "reject",
		"upstream.password": "hunter2",
		"admin.password":    "s3cret",
	} {
		if plain[k] != want {
			t.Errorf("%s = %q, want %q", k, plain[k], want)
		}
	}
	for _, k := range []string{"upstream.password", "admin.password"} {
		if red[k] != config.Redacted {
			t.Errorf("redacted %s = %q", k, red[k])
		}
	}
	if red["upstream.addr"] != plain["upstream.addr"] || red["locks[0].pattern"] != "lock:*" {
		t.Errorf("redaction changed a setting that is no secret: %q %q", red["upstream.addr"], red["locks[0].pattern"])
	}
	if c.Upstream.Password != "hunter2" {
		t.Errorf("redacting changed the configuration itself")
	}
	for _, f := range ConfigFields(c, false) {
		if f.K == "" {
			t.Errorf("a field without a path: %q", f.V)
		}
	}
}

// What a reload applies live is never listed; anything else that changed
// is, in file order; log.level only when the logger's level cannot change.
func TestRestartNeeded(t *testing.T) {
	running := parse(t, base)
	next := parse(t, `
listen: 127.0.0.1:6390
upstream:
  addr: 127.0.0.1:6379
  password: hunter3
admin:
  password: other
log:
  level: debug
locks:
  - pattern: "job:*"
`)
	got := RestartNeeded(running, next, true)
	if want := []string{"listen", "upstream.password"}; !slices.Equal(got, want) {
		t.Errorf("live log level: got %q, want %q", got, want)
	}
	got = RestartNeeded(running, next, false)
	if !slices.Contains(got, "log.level") {
		t.Errorf("log level not live: got %q, want log.level among them", got)
	}
	if got := RestartNeeded(running, running, false); len(got) != 0 {
		t.Errorf("same configuration: got %q", got)
	}
}

// Running: the effective configuration takes only what reloads apply
// live, and the record of reloads says how the last one went.
func TestRunning(t *testing.T) {
	r := NewRunning(*parse(t, base))
	if ran, _ := r.LastReload(); ran {
		t.Fatal("a reload is recorded before any ran")
	}
	next := parse(t, `
listen: 127.0.0.1:6390
upstream:
  addr: 127.0.0.1:6379
admin:
  password: other
locks:
  - pattern: "job:*"
`)
	restart := r.Applied(next, false)
	if !slices.Equal(restart, r.PendingRestart()) || !slices.Contains(restart, "listen") {
		t.Errorf("restart %q, pending %q", restart, r.PendingRestart())
	}
	eff := r.Effective(false)
	if eff.Listen != "127.0.0.1:6380" || eff.Locks[0].Pattern != "job:*" || eff.Admin.Password != "other" {
		t.Errorf("effective: listen %q, lock %q, admin password %q", eff.Listen, eff.Locks[0].Pattern, eff.Admin.Password)
	}
	r.Failed(errors.New("test.yaml:3: bad\ntest.yaml:4: worse"))
	if ran, err := r.LastReload(); !ran || err != "test.yaml:3: bad; test.yaml:4: worse" {
		t.Errorf("last reload: %v %q", ran, err)
	}
	if r.Reloads.Load() != 1 || r.Failures.Load() != 1 {
		t.Errorf("reloads %d, failures %d", r.Reloads.Load(), r.Failures.Load())
	}
}
