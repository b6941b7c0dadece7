// Package catalogue checks a package's error catalogue, for its tests:
// every client-visible error text the package writes is in its errors.go
// (the err* constants and what the err* functions return), and each starts
// with one upper-case code word, then what happened. It reads the
// package's source with go/parser; it does not import testing, and no
// program imports it.
package catalogue

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// codeWord is how every error text begins: one upper-case code word, then
// (unless it is all) a space and what happened.
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

// CodeWords reads dir's errors.go and returns how many error texts it
// checked there (the err* constants and variables, and each value an err*
// function returns) and one finding for each that does not start with one
// upper-case code word.
func CodeWords(dir string) (checked int, bad []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "errors.go"), nil, 0)
	if err != nil {
		return 0, nil, err
	}
	check := func(name string, e ast.Expr) {
		checked++
		text, ok := leftmost(e)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: %s does not start with a string literal", fset.Position(e.Pos()), name))
			return
		}
		// Only the start is known for a text built at run time.
		if i := strings.IndexAny(text, "%"); i >= 0 {
			text = text[:i] + "x"
		}
		if !codeWord.MatchString(strings.TrimRight(text, " ")) {
			bad = append(bad, fmt.Sprintf("%s: %s = %q does not start with one upper-case code word", fset.Position(e.Pos()), name, text))
		}
	}
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
				}
				return true
			})
		}
	}
	return checked, bad, nil
}

// Outside returns one finding for each error text a non-test file of dir
// other than errors.go writes itself: a call of AppendError (resp's) whose
// text starts with a string literal rather than a catalogue entry or an
// error text passed on.
func Outside(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var bad []string
	fset := token.NewFileSet()
	for _, name := range files {
		base := filepath.Base(name)
		if base == "errors.go" || strings.HasSuffix(base, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, base, src, 0)
		if err != nil {
			return nil, err
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
				bad = append(bad, fmt.Sprintf("%s: error text %q written outside errors.go", fset.Position(c.Pos()), text))
			}
			return true
		})
	}
	return bad, nil
}
