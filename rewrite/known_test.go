package rewrite_test

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/lockproxy/lockproxy/rewrite"
	"github.com/lockproxy/lockproxy/scriptcheck"
)

// Issue 39: an EVAL or EVALSHA of a known lock script runs lockproxy's
// equivalent only in the shape it was written for; any other shape, a
// rule whose checks only the monitor makes, or an argument naming another
// lock goes to the monitor; a text that only reads, or a key no rule
// names, runs as the text itself.
func TestDecideKnown(t *testing.T) {
	d := testDecider(t, "locks:\n  - pattern: \"kn:*\"\n  - pattern: \"ml:*\"\n    max_lease: 10s\n", "")
	d.Scripts = rewrite.SeedKnown(scriptcheck.NewCache(0))
	alice, _, _ := sessions()
	text := func(prefix string) (string, string) {
		for _, s := range rewrite.KnownTexts() {
			if strings.HasPrefix(s, prefix) {
				sum := sha1.Sum([]byte(s))
				return s, hex.EncodeToString(sum[:])
			}
		}
		t.Fatalf("no known text starts with %q", prefix)
		return "", ""
	}
	release, releaseSHA := text(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del"`)
	refresh, _ := text(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire"`)
	pttl, _ := text(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl"`)
	obtain, _ := text("\nif redis.call(\"set\"")
	equiv := func(text string) string { return rewrite.KnownEquivalentSHA(text) }

	for _, c := range []struct {
		name string
		args []string
		want string // "equiv", "self", "monitored" or "noscript"
	}{
		{"release", []string{"EVAL", release, "1", "kn:a", "tok"}, "equiv"},
		{"release by SHA1", []string{"EVALSHA", releaseSHA, "1", "kn:a", "tok"}, "equiv"},
		{"release by upper-case SHA1", []string{"evalsha", strings.ToUpper(releaseSHA), "1", "kn:a", "tok"}, "equiv"},
		{"refresh", []string{"EVAL", refresh, "1", "kn:a", "tok", "30000"}, "equiv"},
		{"obtain", []string{"EVAL", obtain, "1", "kn:a", "tok", "3", "30000"}, "equiv"},
		{"an argument more", []string{"EVAL", release, "1", "kn:a", "tok", "x"}, "monitored"},
		{"two keys", []string{"EVAL", release, "2", "kn:a", "kn:b", "tok"}, "monitored"},
		{"a lease of 0 (PEXPIRE deletes)", []string{"EVAL", refresh, "1", "kn:a", "tok", "0"}, "monitored"},
		{"a negative lease", []string{"EVAL", refresh, "1", "kn:a", "tok", "-5"}, "monitored"},
		{"a lease with a leading zero", []string{"EVAL", refresh, "1", "kn:a", "tok", "0100"}, "monitored"},
		{"an offset that is no number", []string{"EVAL", obtain, "1", "kn:a", "tok", "x", "30000"}, "monitored"},
		{"max_lease", []string{"EVAL", release, "1", "ml:a", "tok"}, "monitored"},
		{"a token naming a lock", []string{"EVAL", release, "1", "kn:a", "kn:b"}, "monitored"},
		{"no rule", []string{"EVAL", release, "1", "plain:a", "tok"}, "self"},
		{"a text that only reads", []string{"EVAL", pttl, "1", "kn:a", "tok"}, "self"},
		{"a text one byte off", []string{"EVAL", release + " ", "1", "kn:a", "tok"}, "monitored"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := d.Decide(bs(c.args...), alice, nil)
			text := c.args[1]
			if strings.EqualFold(text, releaseSHA) {
				text = release
			}
			got := "forwarded"
			switch {
			case p.Kind == rewrite.Refuse && strings.HasPrefix(p.Err, "NOSCRIPT"):
				got = "noscript"
			case p.Kind != rewrite.Run:
			case strings.HasPrefix(p.Script.Name, "monitored "):
				got = "monitored"
			case p.Script.SHA == equiv(text):
				got = "equiv"
			case p.Script.Body == text:
				got = "self"
			}
			if got != c.want {
				t.Fatalf("%s: got %s (%+v), want %s", c.name, got, p.Script, c.want)
			}
			if got == "equiv" {
				if p.Script.Client == "" || p.Shape != rewrite.ScriptReply || len(p.Args) != len(c.args)-4+8 {
					t.Errorf("equivalent's plan: client %q shape %d args %d", p.Script.Client, p.Shape, len(p.Args))
				}
			}
		})
	}

	// After SCRIPT FLUSH an EVALSHA of a known text is NOSCRIPT, as
	// Valkey answers it, until the text comes again.
	p := d.Decide(bs("SCRIPT", "FLUSH"), alice, nil)
	p.Learn(true)
	if p := d.Decide(bs("EVALSHA", releaseSHA, "1", "kn:a", "tok"), alice, nil); p.Kind != rewrite.Refuse || !strings.HasPrefix(p.Err, "NOSCRIPT") {
		t.Fatalf("EVALSHA after SCRIPT FLUSH: %+v, want NOSCRIPT", p)
	}
	d.Decide(bs("SCRIPT", "LOAD", release), alice, nil)
	if p := d.Decide(bs("EVALSHA", releaseSHA, "1", "kn:a", "tok"), alice, nil); p.Kind != rewrite.Run || p.Script.SHA != equiv(release) {
		t.Fatalf("EVALSHA after SCRIPT LOAD: %+v, want the equivalent", p)
	}
}
