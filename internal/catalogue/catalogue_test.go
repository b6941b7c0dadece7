package catalogue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A catalogue's texts are checked, constants and functions alike; a text
// without a code word, or not starting with a literal, is a finding.
func TestCodeWords(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "errors.go", `package p

import "fmt"

const errGood = "BUSY lockproxy is busy; try again"
const errBad = "lockproxy is busy"

var errAll = "NOSCRIPT"

func errFmt(n int) string { return fmt.Sprintf("LIMIT %d is too many", n) }
func errLower(s string) string { return "wrong: " + s }
func errPassed(s string) string { return s }
`)
	n, bad, err := CodeWords(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("checked %d texts, want 6", n)
	}
	if len(bad) != 3 || !strings.Contains(bad[0], "errBad") || !strings.Contains(bad[1], "errLower") || !strings.Contains(bad[2], "errPassed") {
		t.Errorf("findings: %q", bad)
	}
}

// An error text written by another file is a finding; a catalogue entry or
// an error passed on is not, and neither are errors.go and tests.
func TestOutside(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "errors.go", `package p
func x() { resp.AppendError(nil, "ERR in the catalogue") }
`)
	write(t, dir, "a.go", `package p
func a(e string) {
	resp.AppendError(nil, errGood)
	resp.AppendError(nil, e)
	resp.AppendError(nil, "ERR written here")
}
`)
	write(t, dir, "a_test.go", `package p
func b() { resp.AppendError(nil, "ERR in a test") }
`)
	bad, err := Outside(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 1 || !strings.Contains(bad[0], `a.go:5`) || !strings.Contains(bad[0], "ERR written here") {
		t.Errorf("findings: %q", bad)
	}
}
