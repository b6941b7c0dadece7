package scriptcheck

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Limits that keep the analysis of any input cheap and bounded.
const (
	// MaxBody: larger scripts are not parsed; every key they receive is
	// Unknown.
	MaxBody   = 1 << 20
	maxSteps  = 200_000 // statements and calls visited, helpers inlined included
	maxDepth  = 160     // nesting of statements and expressions
	maxInline = 8       // helper calls inlined inside each other
	maxPasses = 8       // passes over one loop body
)

// Analyze reads one EVAL script.
func Analyze(body string) *Report {
	r := &Report{SHA: SHA1(body)}
	analyzeInto(r, body)
	return r
}

func analyzeInto(r *Report, body string) {
	if len(body) > MaxBody {
		r.Err = fmt.Sprintf("the script is larger than %d bytes and was not analysed", MaxBody)
		return
	}
	chunk, err := parseLua(body)
	if err != nil {
		r.Err, r.ErrLine = parseErr(err, body)
		return
	}
	a := newAnalyzer(false)
	if a.protect(r, func() {
		a.blockIn(chunk, a.globals.child(), nil)
		a.cold()
	}) {
		r.setSites(a.sites)
		r.Flushes = a.flushes
	}
}

func (r *Report) setSites(sites []Site) {
	seen := map[string]bool{}
	out := make([]Site, 0, len(sites))
	for _, s := range sites {
		k := fmt.Sprint(s.Line, s.Command, s.Op, s.Target.String(), s.Verdict, s.Reason)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	r.Sites = out
	r.named = false
	for _, s := range out {
		if s.Target.Named() {
			r.named = true
		}
	}
}

// parseLua parses with gopher-lua. A "#!lua ..." first line (Valkey's
// shebang for scripts and libraries) is blanked, keeping line numbers.
func parseLua(body string) (chunk []ast.Stmt, err error) {
	if strings.HasPrefix(body, "#!") {
		if i := strings.IndexByte(body, '\n'); i >= 0 {
			body = body[i:]
		} else {
			body = ""
		}
	}
	defer func() {
		if p := recover(); p != nil {
			chunk, err = nil, fmt.Errorf("cannot parse: %v", p)
		}
	}()
	chunk, err = parse.Parse(strings.NewReader(body), "script")
	if err == nil && chunk == nil {
		err = errors.New("cannot parse")
	}
	return chunk, err
}

// parseErr is the message and line of a parse error; at the end of the
// input the parser has no line, so it is the script's last.
func parseErr(err error, body string) (string, int) {
	var pe *parse.Error
	if errors.As(err, &pe) {
		msg := strings.TrimSpace(pe.Message)
		if pe.Token != "" {
			msg += fmt.Sprintf(" near %q", pe.Token)
		}
		line := pe.Pos.Line
		if line < 1 {
			line = strings.Count(strings.TrimRight(body, "\n"), "\n") + 1
		}
		return "the script does not parse: " + msg, line
	}
	return "the script does not parse: " + err.Error(), 0
}
