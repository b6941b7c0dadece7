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

// check-config accepts a cluster upstream and refuses one beside addr, at
// the line of addr; in front of a cluster it refuses lock patterns whose
// records cannot share their key's slot and guards outside the lock's slot.
func TestCheckConfigCluster(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cfg, want string
		code            int
	}{
		{"ok.yaml", "cluster_face: single_node\nupstream:\n  cluster:\n    seeds: [127.0.0.1:7000, 127.0.0.1:7001]\n", "ok.yaml: ok\n", 0},
		{"both.yaml", "upstream:\n  addr: 127.0.0.1:6379\n  cluster:\n    seeds: [127.0.0.1:7000]\n",
			"both.yaml:2: upstream.addr: cannot be set with upstream.cluster", 1},
		{"brace.yaml", "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\nlocks:\n  - pattern: \"job}*:lock\"\n",
			`brace.yaml:5: locks[0].pattern: "job}*:lock": in a cluster the lock records of its keys (e.g. "job}sample:lock") cannot share the key's hash slot`, 1},
		{"guard.yaml", "upstream:\n  cluster:\n    seeds: [127.0.0.1:7000]\nlocks:\n  - pattern: \"*:lock\"\n    fence:\n      counter: \"{{key}}:fence\"\n      guards: [\"{{key}}:*\", \"audit:{key}\"]\n",
			`guard.yaml:8:29: locks[0].fence.guards[1]: "audit:{key}" guards, for lock "sample:lock", keys in hash slot`, 1},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := checkConfig(p, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%s: exit %d, out %q, err %q; want exit %d with %q", tc.name, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
}

// check-config prints the warnings (on main it passed both silently).
func TestCheckConfigWarns(t *testing.T) {
	path := writeConfig(t, "listen: 127.0.0.1:6379\nupstream:\n  addr: 127.0.0.1:6379\nlocks:\n  - pattern: \"*\"\n")
	code, out, errs := runCLI("check-config", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		path + `: warning: locks[0].pattern: "*" matches every key`,
		path + ": warning: listen: 127.0.0.1:6379 is upstream.addr",
		path + ": ok",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
