package admin

import (
	"testing"

	"github.com/lockproxy/lockproxy/internal/catalogue"
)

// Every error text of errors.go's catalogue (the err* constants, and what
// each err* function returns) starts with one upper-case code word, then
// what happened.
func TestErrorCatalogueCodeWords(t *testing.T) {
	n, bad, err := catalogue.CodeWords(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if n < 15 {
		t.Fatalf("checked only %d error texts in errors.go", n)
	}
}

// No file of the package but errors.go writes an error text of its own:
// resp.AppendError is given a catalogue entry (or an error text passed on),
// never a literal.
func TestErrorTextsOnlyInCatalogue(t *testing.T) {
	bad, err := catalogue.Outside(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
