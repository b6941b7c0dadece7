package rewrite

// Fail closed (issue 38): lockproxy's own keys, and the keys only Valkey
// can list.

import (
	"errors"
	"strings"
	"testing"
)

// The monitor's FLUSHALL probe (monitor.lua's flushed) is the key
// FlushProbeKey names, which Decider.own and the monitors' own-key checks
// refuse to clients.
func TestFlushProbeIsOwnKey(t *testing.T) {
	if !strings.Contains(monitorLua, "'"+FlushProbeKey+"'") {
		t.Fatalf("monitor.lua does not set the probe FlushProbeKey names (%s)", FlushProbeKey)
	}
	d := &Decider{}
	if !d.own([]byte(FlushProbeKey)) {
		t.Errorf("Decider.own(%q) = false", FlushProbeKey)
	}
}

// KeysUnknown: Valkey's ERR answers to COMMAND GETKEYSANDFLAGS forward
// the command (it names no key, or Valkey refuses it too); BUSY and
// LOADING are answered as they came; anything else is refused.
func TestKeysUnknown(t *testing.T) {
	args := [][]byte{[]byte("sort"), []byte("src"), []byte("STORE"), []byte("v:lock")}
	for _, tc := range []struct {
		err  string
		kind Kind
		want string
	}{
		{"ERR Invalid arguments specified for command", Forward, ""},
		{"ERR The command has no key arguments", Forward, ""},
		{"BUSY Valkey is busy running a script.", Refuse, "BUSY Valkey is busy running a script."},
		{"LOADING Valkey is loading the dataset in memory", Refuse, "LOADING Valkey is loading the dataset in memory"},
		{"NOPERM User lockproxy has no permissions to run the 'command|getkeysandflags' command", Refuse, "UNSUPPORTED lockproxy refused SORT: only Valkey can list the keys it writes"},
		{"dial tcp 127.0.0.1:1: connect: connection refused", Refuse, "UNSUPPORTED lockproxy refused SORT"},
	} {
		p := KeysUnknown(args, errors.New(tc.err))
		if p.Kind != tc.kind || !strings.HasPrefix(p.Err, tc.want) {
			t.Errorf("%q: plan kind %d %q, want %d %q", tc.err, p.Kind, p.Err, tc.kind, tc.want)
		}
	}
}
