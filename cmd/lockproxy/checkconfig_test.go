package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check-config says when a fence guard also covers the lock's own fence
// counter (the documented "{base}:*" covers "{base}:fence"), and that those
// keys stay lockproxy's; a guard that does not cover them gets no note.
func TestCheckConfigNotesGuardsOverOwnKeys(t *testing.T) {
	dir := t.TempDir()
	write := func(name, guards string) string {
		p := filepath.Join(dir, name)
		cfg := "listen: 127.0.0.1:0\nupstream:\n  addr: 127.0.0.1:6379\nlocks:\n  - pattern: \"{*}:mutex\"\n    fence:\n      counter: \"{base}:fence\"\n      guards: [" + guards + "]\n"
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		guards string
		note   bool
	}{{`"{base}:*"`, true}, {`"{base}:data", "{base}:items:*"`, false}} {
		p := write(strings.NewReplacer(`"`, "", ":", "", "*", "", "{", "", "}", "", ",", "", " ", "").Replace(tc.guards)+".yaml", tc.guards)
		var out, errb bytes.Buffer
		if code := checkConfig(p, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.guards, code, errb.String())
		}
		note := strings.Contains(out.String(), `note: rule 1 "{*}:mutex": guards[0] "{base}:*" also matches the lock's fence counter "{base}:fence"`)
		if note != tc.note || !strings.HasSuffix(out.String(), p+": ok\n") {
			t.Errorf("guards %s: got %q, want a note: %v", tc.guards, out.String(), tc.note)
		}
	}
}
