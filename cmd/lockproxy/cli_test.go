package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// The command line refuses what it does not understand instead of starting
// a proxy with the defaults (on main, `chek-config x.yaml` and leftover
// arguments started one, and --version was an unknown flag).
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"chek-config", "x.yaml"}, 2, "", `unknown command "chek-config"; did you mean "check-config"?`},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate" (lockproxy help lists them)`},
		{[]string{"--config", "x.yaml", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"--version"}, 0, "lockproxy ", ""},
		{[]string{"version"}, 0, "lockproxy ", ""},
		{[]string{"version", "x"}, 2, "", `unexpected argument "x"`},
		{[]string{"check-config"}, 2, "", "usage: lockproxy check-config FILE"},
		{[]string{"check-upstream"}, 2, "", "usage: lockproxy check-upstream FILE"},
	} {
		code, out, errs := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
			t.Errorf("lockproxy %s: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", strings.Join(tc.args, " "), code, out, errs, tc.code, tc.out, tc.err)
		}
	}
}

// -h and help list every subcommand.
func TestHelpListsEverySubcommand(t *testing.T) {
	code, _, errs := runCLI("-h")
	_, out, _ := runCLI("help")
	if code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	for name := range subcommands {
		for what, text := range map[string]string{"-h": errs, "help": out} {
			if !strings.Contains(text, "lockproxy "+name) {
				t.Errorf("%s does not list %s:\n%s", what, name, text)
			}
		}
	}
}

// Starting without --config says so before anything else.
func TestNoConfigWarns(t *testing.T) {
	lp := startMain(t, "--listen", freeAddr(t), "--upstream", freeAddr(t))
	eventually(t, "the warning", func() bool {
		return strings.Contains(lp.logs.String(), "WARNING: no --config FILE: running with the built-in defaults")
	})
}

// make build stamps the version (on main it reported dev).
func TestBuildStampsVersion(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	out := filepath.Join(t.TempDir(), "bin")
	cmd := exec.Command("make", "-s", "-C", "../..", "build", "VERSION=v9.8.7-test", "BIN="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, b)
	}
	b, err := exec.Command(filepath.Join(out, "lockproxy"), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "lockproxy v9.8.7-test\n" {
		t.Fatalf("version: %q", b)
	}
	_ = os.Remove(out)
}
