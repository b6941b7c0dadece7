package rewrite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A lockproxy error text: a code word, then "lockproxy".
var errorText = regexp.MustCompile(`^-?[A-Z]{3,} lockproxy `)

// No Go file of the package but errors.go writes an error text of its own
// (the texts inside Lua source are the scripts' own, see errors.go).
func TestErrorTextsOnlyInCatalogue(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(x ast.Node) bool {
			lit, ok := x.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || strings.HasPrefix(lit.Value, "`") {
				return true // raw strings are Lua source
			}
			text, err := strconv.Unquote(lit.Value)
			if err != nil || !errorText.MatchString(text) {
				return true
			}
			if name == "errors.go" {
				found++
			} else {
				t.Errorf("%s: error text %q written outside errors.go", fset.Position(lit.Pos()), text)
			}
			return true
		})
	}
	if found < 10 {
		t.Fatalf("found only %d error texts in errors.go: the check reads the wrong thing", found)
	}
}
