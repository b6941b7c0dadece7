package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top, from this package's directory.
const root = "../.."

// docs returns the docs the check reads, relative to root.
func docs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "CONTRIBUTING.md"}
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A repository path in backticks: at least one directory, a known suffix,
// no glob characters.
var pathRef = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:go|lua|sh|md|yaml|yml|tsv|golden|json))`")

func TestDocsNameFilesThatExist(t *testing.T) {
	for _, doc := range docs(t) {
		for _, m := range pathRef.FindAllStringSubmatch(read(t, doc), -1) {
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}

// A file followed by the names it declares: "`proxy/handle.go`: `handle`,
// `route`" (a list of backticked names, split by commas or "and").
var declRef = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:go|lua))`:\\s+((?:`[A-Za-z_][A-Za-z0-9_.]*`(?:,\\s+|\\s+and\\s+)?)+)")

var nameInList = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.]*)`")

// declares reports whether src (a Go or Lua file) declares name: a
// function, a method, a type, or a package-level var or const.
func declares(src, file, name string) bool {
	q := regexp.QuoteMeta(name)
	var re string
	if strings.HasSuffix(file, ".lua") {
		re = `(?m)^\s*(?:local\s+)?function\s+` + q + `\b`
	} else {
		re = `(?m)^(?:func\s+(?:\([^)]*\)\s+)?` + q + `\b|type\s+` + q + `\b|(?:var|const)\s+` + q + `\b|\t` + q + `\s)`
	}
	return regexp.MustCompile(re).MatchString(src)
}

func TestDocsNameDeclaredFunctions(t *testing.T) {
	n := 0
	for _, doc := range docs(t) {
		for _, m := range declRef.FindAllStringSubmatch(read(t, doc), -1) {
			b, err := os.ReadFile(filepath.Join(root, m[1]))
			if err != nil {
				continue // reported by TestDocsNameFilesThatExist
			}
			for _, nm := range nameInList.FindAllStringSubmatch(m[2], -1) {
				name := nm[1]
				if i := strings.LastIndexByte(name, '.'); i >= 0 {
					name = name[i+1:] // Type.Method: the method
				}
				n++
				if !declares(string(b), m[1], name) {
					t.Errorf("%s: %s does not declare %s", doc, m[1], nm[1])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no `file.go`: `name` reference found: the pattern no longer matches the docs")
	}
}

// A relative Markdown link, with its optional #section.
var link = regexp.MustCompile(`\]\(([^)\s:#]*)(#[^)\s]*)?\)`)

var heading = regexp.MustCompile("(?m)^#{1,6}\\s+(.+?)\\s*$")

// slug is GitHub's anchor for a heading: lower case, punctuation dropped
// but for '-' and '_', spaces as '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDocsLinksResolve(t *testing.T) {
	for _, doc := range docs(t) {
		text := read(t, doc)
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			rel := doc
			if target != "" {
				rel = filepath.Join(filepath.Dir(doc), target)
				if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
					t.Errorf("%s links to %s, which does not exist", doc, target)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			found := false
			for _, h := range heading.FindAllStringSubmatch(read(t, rel), -1) {
				if slug(h[1]) == anchor {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s links to %s#%s: no such section", doc, target, anchor)
			}
		}
	}
}

func TestDocsWithinLength(t *testing.T) {
	for _, doc := range docs(t) {
		limit := 600
		if doc == "README.md" {
			limit = 350
		}
		if n := strings.Count(read(t, doc), "\n"); n > limit {
			t.Errorf("%s has %d lines, more than %d: a doc is a map of what is true now; history stays in git", doc, n, limit)
		}
	}
}
