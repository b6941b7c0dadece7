package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func luaPath(name string) string {
	return filepath.Join("..", "..", "scriptcheck", "testdata", "lua", name)
}

func runLint(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := lint(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestLintBlind(t *testing.T) {
	p := luaPath("blind_del_before_compare.lua")
	code, out, _ := runLint(t, "", p)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	want := p + ":3: blind: DEL deletes KEYS[1] without first comparing its value (or owner field) with an argument\n" +
		p + ": script 802ee3b317483d3b1e8468ba56a65275ac5c299b: blind: KEYS[1] blind\n"
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

func TestLintClean(t *testing.T) {
	files := []string{luaPath("canonical_release.lua"), luaPath("hash_unlock.lua"), luaPath("setnx_acquire.lua"), luaPath("unknown_dynamic.lua")}
	code, out, _ := runLint(t, "", files...)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (unknown is not blind)\n%s", code, out)
	}
	for _, w := range []string{
		files[0] + ": script af214dc7d897b3c37d670c72363294b19289065b: guarded: KEYS[1] guarded\n",
		files[2] + ": script 5d7fcb19b0ecb8c6af3de3e7aecb83d25637e348: acquire: KEYS[1] acquire\n",
		files[3] + ":2: unknown: the call may change KEYS[1]: its command name is not a literal\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, files[0]+":4") {
		t.Errorf("findings printed for a guarded script without -v:\n%s", out)
	}
	_, out, _ = runLint(t, "", "-v", files[0])
	if !strings.Contains(out, files[0]+":4: guarded: DEL deletes KEYS[1] only after its value (or owner field) was compared with an argument\n") {
		t.Errorf("-v output:\n%s", out)
	}
}

func TestLintStdinAndLibrary(t *testing.T) {
	code, out, _ := runLint(t, "local v = redis.call('GET', KEYS[1])\nredis.call('UNLINK', KEYS[1])\n", "-")
	if code != 1 || !strings.HasPrefix(out, "<stdin>:2: blind: UNLINK deletes KEYS[1]") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	lib, err := os.ReadFile(luaPath("locklib.lua"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runLint(t, string(lib), "-")
	want := "<stdin>: function lock_acquire: acquire: KEYS[1] acquire\n" +
		"<stdin>:22: blind: DEL deletes KEYS[1] without first comparing its value (or owner field) with an argument\n" +
		"<stdin>: function lock_force: blind: KEYS[1] blind\n" +
		"<stdin>: function lock_release: guarded: KEYS[1] guarded\n"
	if code != 1 || out != want {
		t.Fatalf("exit %d, got\n%s\nwant\n%s", code, out, want)
	}
}

func TestLintErrors(t *testing.T) {
	// A script that does not parse fails the run (exit 0 on main).
	code, out, _ := runLint(t, "if redis.call('GET', KEYS[1]) then\n", "-")
	if code != 2 || !strings.Contains(out, "<stdin>:1: unknown: the script does not parse: syntax error") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	code, _, errs := runLint(t, "", "no/such/file.lua")
	if code != 2 || !strings.Contains(errs, "no/such/file.lua") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if code, _, errs := runLint(t, ""); code != 2 || !strings.Contains(errs, "usage: lockproxy lint") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// A read error wins over blind: the run did not check everything.
	if code, _, _ := runLint(t, "", luaPath("blind_del.lua"), "no/such/file.lua"); code != 2 {
		t.Fatalf("exit %d", code)
	}
	// Through run, as the command line dispatches it.
	var out2, err2 bytes.Buffer
	if code := run([]string{"lint", luaPath("refresh.lua")}, &out2, &err2); code != 0 || !strings.Contains(out2.String(), "guarded") {
		t.Fatalf("run: exit %d %s %s", code, out2.String(), err2.String())
	}
}
