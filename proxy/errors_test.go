package proxy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// codeWord is how every error text the proxy writes begins: one upper-case
// code word, then (unless it is all) a space and what happened.
var codeWord = regexp.MustCompile(`^[A-Z][A-Z0-9]*( [^\r\n]+)?$`)

// leftmost is the string literal an error text starts with: the
// expression's own, the left side of a concatenation's, or a
// fmt.Sprintf format's; ok is false when it starts with something else.
func leftmost(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.BinaryExpr:
		return leftmost(e.X)
	case *ast.ParenExpr:
		return leftmost(e.X)
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sprintf" && len(e.Args) > 0 {
			return leftmost(e.Args[0])
		}
	}
	return "", false
}

// Every error text of errors.go's catalogue (the err* constants, and what
// each err* function returns) starts with one upper-case code word.
func TestErrorCatalogueCodeWords(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, e ast.Expr) {
		text, ok := leftmost(e)
		if !ok {
			t.Errorf("%s: %s does not start with a string literal", fset.Position(e.Pos()), name)
			return
		}
		// Only the start is known for a text built at run time.
		if i := strings.IndexAny(text, "%"); i >= 0 {
			text = text[:i] + "x"
		}
		if !codeWord.MatchString(strings.TrimRight(text, " ")) {
			t.Errorf("%s: %s = %q does not start with one upper-case code word", fset.Position(e.Pos()), name, text)
		}
	}
	n := 0
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				vs, ok := sp.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, id := range vs.Names {
					if strings.HasPrefix(id.Name, "err") && i < len(vs.Values) {
						check(id.Name, vs.Values[i])
						n++
					}
				}
			}
		case *ast.FuncDecl:
			if !strings.HasPrefix(d.Name.Name, "err") || d.Recv != nil {
				continue
			}
			ast.Inspect(d.Body, func(x ast.Node) bool {
				if r, ok := x.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
					check(d.Name.Name, r.Results[0])
					n++
				}
				return true
			})
		}
	}
	if n < 30 {
		t.Fatalf("checked only %d error texts in errors.go", n)
	}
}

// No file of the package but errors.go writes an error text of its own:
// resp.AppendError is given a catalogue entry (or an error text passed on),
// never a literal.
func TestErrorTextsOnlyInCatalogue(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if name == "errors.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(x ast.Node) bool {
			c, ok := x.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "AppendError" || len(c.Args) < 2 {
				return true
			}
			if text, ok := leftmost(c.Args[1]); ok {
				t.Errorf("%s: error text %q written outside errors.go", fset.Position(c.Pos()), text)
			}
			return true
		})
	}
}
